"""The guest modules build to the same bytes wherever the cache is: a
module's __FILE__ (might_sleep() on the debug profile, a WARN's location)
must not carry its build directory, whose length would move the module's
layout, and a deterministic run's interleavings, from one cache to another
(the debug profile's golden files differed on a cold cache for that)."""
import pytest

from rig.artifacts import module

pytestmark = pytest.mark.builds

SOURCE = """// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
static int __init where_init(void)
{
\tpr_info("built from %s\\n", __FILE__);
\treturn 0;
}
module_init(where_init);
MODULE_LICENSE("GPL");
"""


def test_a_module_is_the_same_bytes_built_in_any_directory(tmp_path):
    src = tmp_path / "where"
    src.mkdir()
    (src / "main.c").write_text(SOURCE)
    (src / "Kbuild").write_text("obj-m := where.o\nwhere-y := main.o\n")
    where = module.GuestModule("where", src, "module")
    built = []
    for out in (tmp_path / "a", tmp_path / "a-much-longer-directory-name"):
        out.mkdir()
        module._build("patched", where, out)
        built.append((out / "src" / "where.ko").read_bytes())
        assert str(out).encode() not in built[-1]
    assert built[0] == built[1]
