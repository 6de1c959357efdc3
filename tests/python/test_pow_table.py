"""src/cpu/vpow_table.rs is what tools/pow_log_table.py writes: the tables of
`pow`'s logarithm are computed (at 200 bits, with mpmath), not copied."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_table_is_the_scripts_output():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "pow_log_table.py")],
                       capture_output=True, text=True, check=True)
    with open(os.path.join(ROOT, "src", "cpu", "vpow_table.rs")) as f:
        committed = f.read()
    assert r.stdout.strip() == committed.strip()
    # The slot holding 1 has invc = 1 and ln c = 0 in both tables.
    assert committed.count("0x3ff0_0000_0000_0000,") == 2
