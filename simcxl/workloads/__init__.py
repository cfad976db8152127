"""Workloads beyond the memory ones: CXL.cache accelerators (``coherent``), host and accelerators at once
(``mixed``), the CXL-NIC (``nic``), memory shared by hosts (``sharing``), the fabric manager (``fabric``);
plots of their results and the demo job."""
