"""gem5 side: standard-library components built from the schema (``components``), the full-system
board (``board``, ``numa``, ``fs``, ``kvm``), the calibration's gem5 engine (``engine``) and the CXL-NIC in
gem5 (``nic``). Only ``components`` and ``board`` run inside gem5; the rest start gem5 from outside."""
