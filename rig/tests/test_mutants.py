"""The kill table `make mutants` writes and renders (the runs themselves are
`make mutants`: a kernel build per mutant)."""
import json

from rig import mutants


def test_kill_table_names_what_each_mutant_breaks_and_what_caught_it(tmp_path):
    test = "scenarios.test_s07_nmi_mid_line::test_s7[patched]"
    rows = [("ier-not-restored", "caught", {test: "AssertionError: IER x|y\nmore"}),
            ("emergency-cpu-zero", "NOT CAUGHT", {})]
    mutants.write_kill_table(tmp_path / "kills.json", rows)
    table = json.loads((tmp_path / "kills.json").read_text())
    first = table["mutants"][0]
    assert first["breaks"].startswith("The 8250 console write leaves IER cleared")
    assert first["caught_by"] == {test: "AssertionError: IER x|y"}
    mutants.render_kill_table(tmp_path / "kills.json", tmp_path / "mutants.md")
    page = (tmp_path / "mutants.md").read_text()
    assert "| `ier-not-restored` |" in page
    assert "`test_s7[patched]`: AssertionError: IER x\\|y" in page
    assert "| `emergency-cpu-zero` |" in page and "NOT CAUGHT | - |" in page
