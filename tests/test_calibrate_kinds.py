"""`simcxl calibrate` gives fit and validation errors for each kind of curve
(idle latency, STREAM, loaded one-direction traffic, read/write mixes)."""

from __future__ import annotations

import json

import pytest

from simcxl.calibration.report import by_kind, curve_kind


def point(experiment, x, error, role):
    return {"experiment": experiment, "x": x, "error_pct": error, "role": role}


def loaded(read_fraction):
    return json.dumps({"pattern": "random", "read_fraction": read_fraction, "threads": 4})


def test_each_point_falls_in_its_kind_of_curve():
    assert curve_kind(point("lat_mem_rd", "1073741824", 0, "fit")) == "idle"
    assert curve_kind(point("idle_latency", "mlc", 0, "fit")) == "idle"
    assert curve_kind(point("stream", "copy", 0, "fit")) == "stream"
    assert curve_kind(point("loaded_bandwidth", loaded(1.0), 0, "fit")) == "loaded"
    assert curve_kind(point("loaded_bandwidth", loaded(0.0), 0, "fit")) == "loaded"
    assert curve_kind(point("loaded_latency", loaded(0.75), 0, "fit")) == "mix"


def test_errors_per_kind_are_the_mean_absolute_errors_of_its_points():
    # idle: fit |1|; validation |-2|, |4| -> 3. loaded: validation |-10| and |20| -> 15. mix: fit |6|.
    pts = [point("lat_mem_rd", "1", 1.0, "fit"), point("lat_mem_rd", "2", -2.0, "validation"),
           point("lat_mem_rd", "3", 4.0, "validation"), point("loaded_bandwidth", loaded(1.0), -10.0, "validation"),
           point("loaded_bandwidth", loaded(0.0), 20.0, "validation"), point("loaded_latency", loaded(0.5), 6.0, "fit")]
    k = by_kind(pts)
    assert set(k) == {"idle", "loaded", "mix"}
    assert (k["idle"]["fit_points"], k["idle"]["validation_points"]) == (1, 2)
    assert k["idle"]["fit_mae_pct"] == pytest.approx(1.0) and k["idle"]["validation_mae_pct"] == pytest.approx(3.0)
    assert k["loaded"]["fit_mae_pct"] is None and k["loaded"]["validation_mae_pct"] == pytest.approx(15.0)
    assert k["mix"]["fit_mae_pct"] == pytest.approx(6.0) and k["mix"]["validation_points"] == 0
