"""Run a command that ends when the hub's process does, even when the hub is killed with SIGKILL (no cleanup of its
own runs then): ``die_with_hub.py HUB_PID COMMAND...``. The hub starts its proxy and idle culler through it, so a
killed hub leaves neither behind, and the next start never finds a second culler beside its own."""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>: the signal this process gets when its parent thread exits


def main() -> None:
    hub, command = int(sys.argv[1]), sys.argv[2:]
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        sys.exit(f"prctl(PR_SET_PDEATHSIG): {os.strerror(ctypes.get_errno())}")
    if os.getppid() != hub:
        sys.exit("the hub exited before its child started")  # it died before prctl could take effect
    os.execvp(command[0], command)  # the death signal survives exec (prctl(2))


if __name__ == "__main__":
    main()
