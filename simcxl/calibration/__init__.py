"""Calibration: a testbed's measurements (``testbed``, ``consistency``), the fit of a few physical
parameters per memory (``calibrate``, ``fitsearch``) and its report."""
