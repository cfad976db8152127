"""gem5 side: standard-library components built from the schema (``components``), a topology file's
bridges, switches and devices as gem5 objects (``fabric``), the full-system board (``board``, ``numa``,
``fs``, ``kvm``), the calibration's gem5 engine (``engine``) and the CXL-NIC in gem5 (``nic``).
gem5_configs/ import the first from inside gem5; ``fs``, ``engine`` and ``nic`` start gem5 from outside."""
