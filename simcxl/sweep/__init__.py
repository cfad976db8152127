"""Design-space sweeps: a spec and its run (``spec``), a point's base and workload (``points``)."""
