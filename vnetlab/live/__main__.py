"""``python -m vnetlab.live record [PATH]``: record this kernel's side of the live labs (root; data/live/)."""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m vnetlab.live",
        description="Record this kernel's side of notebook 60's experiments (the feature steps, UDP_SEGMENT, veth "
                    "GRO, vxlan) for readers who cannot run them: needs root and network namespaces.")
    sub = p.add_subparsers(dest="command", required=True, metavar="record")
    rec = sub.add_parser("record", help="run the labs as root and write data/live/<uname -r>.json",
                         description="Run notebook 60's labs on this kernel (root) and write their kernel side as "
                                     "JSON; every row must agree with the model.")
    rec.add_argument("path", nargs="?", default=None, metavar="PATH",
                     help="where to write the record (default: data/live/<uname -r>.json in vnetlab.data)")
    rec.add_argument("-o", "--output", metavar="PATH", default=None, help="the same as PATH")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # exits 2 with the usage on bad arguments, 0 after --help
    from vnetlab.errors import LiveUnavailable
    from vnetlab.live.recorded import record

    if args.path is not None and args.output is not None:
        parser().error("give the output path once: PATH or --output PATH")
    out = args.output if args.output is not None else args.path
    if out is not None and (not out.strip() or out.startswith("-")):
        parser().error(f"PATH: {out!r} is not a file path")
    try:
        print(record(out))
    except LiveUnavailable as exc:
        print(f"python -m vnetlab.live record: {exc.reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
