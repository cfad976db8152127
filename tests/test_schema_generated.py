"""One schema: the C++ field lists, the gem5 SimObjects' parameter sections and
the parameter reference are generated from simcxl/config/groups.py by
`python -m simcxl.config.schema_gen`, and committed. These tests fail, naming the
file, when one differs from what the dataclasses generate (groups.py edited
without rerunning the generator, or a generated file edited by hand)."""

import re
import shutil
import subprocess
import sys
from dataclasses import field, fields, make_dataclass

import pytest

from simcxl import _core
from simcxl.config import schema_gen
from simcxl.config.groups import GROUPS

from conftest import REPO


def check(root):
    """The generator's check mode as a developer or CI runs it (from a source tree: no _core needed)."""
    return subprocess.run([sys.executable, "-m", "simcxl.config.schema_gen", "--check", "--root", str(root)], cwd=REPO,
                          capture_output=True, text=True)


def test_generated_files_are_up_to_date():
    r = check(REPO)
    assert r.returncode == 0, (f"generated files differ from what simcxl/config/groups.py generates; run "
                               f"`python -m simcxl.config.schema_gen` and commit them:\n{r.stdout}{r.stderr}")


def copy_tree(tmp_path):
    """The generator's inputs and outputs in a scratch repository."""
    for rel in [*schema_gen.INPUTS, *schema_gen.SIMOBJECTS, schema_gen.HEADER, schema_gen.DOCS]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    return tmp_path


def test_check_names_each_file_a_changed_default_reaches(tmp_path):
    root = copy_tree(tmp_path)
    src = root / schema_gen.SOURCE
    text = src.read_text()
    old = 'phy_latency_ns: float = param(20.0,'
    assert text.count(old) == 1
    src.write_text(text.replace(old, 'phy_latency_ns: float = param(21.0,'))
    r = check(root)
    assert r.returncode == 1
    named = sorted(line.split(":")[0] for line in r.stdout.splitlines() if "out of date" in line)
    # LinkParams: its C++ list, the SimObjects holding links (the Type-3 expander's and the switch's
    # upstream ones, link_*) and the reference; not the others.
    assert named == sorted([schema_gen.HEADER, "devices/CXLType3Expander.py", "devices/CXLSwitch.py",
                            schema_gen.DOCS]), r.stdout
    assert "-    X(double, phy_latency_ns, 20.0, 0.0, 10000.0)" in r.stdout
    # Writing mode brings them back in line.
    subprocess.run([sys.executable, "-m", "simcxl.config.schema_gen", "--root", str(root)], cwd=REPO, check=True,
                   capture_output=True)
    assert check(root).returncode == 0
    assert "X(double, phy_latency_ns, 21.0, 0.0, 10000.0)" in (root / schema_gen.HEADER).read_text()


def test_check_names_a_simobject_file_edited_by_hand(tmp_path):
    root = copy_tree(tmp_path)
    f = root / "devices/CXLNic.py"
    text = f.read_text()
    assert text.count("nic_ops_in_flight = Param.Unsigned(32,") == 1
    f.write_text(text.replace("nic_ops_in_flight = Param.Unsigned(32,", "nic_ops_in_flight = Param.Unsigned(33,"))
    r = check(root)
    assert r.returncode == 1 and r.stdout.startswith("devices/CXLNic.py: out of date"), r.stdout


def test_compiled_literals_read_back_exactly():
    """The numbers the generator writes into the header are the dataclasses' exactly once compiled
    (doubles by repr(), 64-bit integers with ull): the built core's schema, compared without tolerance."""
    cpp = _core.schema()
    assert list(cpp) == list(GROUPS)
    for group, cls in GROUPS.items():
        py = [(f.name, f.type in ("int", int), f.default, f.metadata["lo"], f.metadata["hi"]) for f in fields(cls)]
        assert [tuple(x) for x in cpp[group]] == py, group


def one_field(**kw):
    return fields(make_dataclass("G", [("x", kw.pop("type"), field(**kw))]))[0]


@pytest.mark.parametrize("type_,default,meta,message", [
    (int, 1, {"lo": 0, "hi": 1 << 32, "wide": False}, "does not fit its C++ type uint32_t"),
    (int, 1, {"lo": -1, "hi": 2, "wide": True}, "does not fit its C++ type uint64_t"),
    (int, 1, {"lo": 0, "hi": 1e6}, "not a whole number"),
    (float, 1.0, {"lo": 0, "hi": float("inf")}, "not a finite number"),
    (float, 5.0, {"lo": 0, "hi": 2}, "outside"),
])
def test_generator_refuses_what_cxx_cannot_hold(type_, default, meta, message):
    f = one_field(type=type_, default=default, metadata={"unit": "", "doc": "", "choices": None, **meta})
    with pytest.raises(schema_gen.SchemaError, match=re.escape(message)):
        schema_gen.check_field("G", f)


def test_cxx_literals():
    f_int = one_field(type=int, default=0, metadata={})
    f_dbl = one_field(type=float, default=0.0, metadata={})
    assert [schema_gen.cxx_literal(f_dbl, v) for v in (36.0, 0.0625, 1e-3, 0, 1e6, 0.1)] == \
        ["36.0", "0.0625", "0.001", "0.0", "1000000.0", "0.1"]
    assert [schema_gen.cxx_literal(f_int, v) for v in (1, (1 << 31) - 1, 1 << 31, 1 << 52)] == \
        ["1", "2147483647", "2147483648ull", "4503599627370496ull"]
