"""``python -m vnetlab.live record [PATH]``: record this kernel's side of the live labs (root; data/live/)."""

import sys

from vnetlab.live.recorded import record

if sys.argv[1:2] != ["record"] or len(sys.argv) > 3:
    sys.exit("usage: python -m vnetlab.live record [PATH]   (as root: writes data/live/<uname -r>.json)")
print(record(sys.argv[2] if len(sys.argv) > 2 else None))
