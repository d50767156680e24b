"""Debian packages for the lab, fetched through the lab's OWN apt configuration (never the machine's sources).

Each suite gets a private sources list, lists directory and cache under ``lab/work/apt/<suite>/``; apt-get is
called with ``-o Dir::Etc::sourcelist=... -o Dir::Etc::sourceparts=- -o Dir::State::Lists=... -o Dir::Cache=...``
so neither /etc/apt nor /var/lib/apt/lists nor /var/cache/apt is read for sources or written. Packages are only
downloaded (``apt-get download``) and unpacked with ``dpkg-deb -x``: nothing is installed on the host.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lab.util import log, sh

MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


@dataclass(frozen=True)
class Suite:
    """One Debian suite the lab takes a kernel from."""

    name: str  # bullseye, bookworm(-security, -backports), trixie-backports, forky: deb.debian.org serves them all
    uri: str = MIRROR

    def sources_line(self) -> str:
        return f"deb [signed-by={KEYRING}] {self.uri} {self.name} main\n"


class Apt:
    """apt-get with a private configuration for one suite, rooted at ``work/apt/<suite>``."""

    def __init__(self, suite: Suite, work: Path) -> None:
        self.suite = suite
        self.root = work.resolve() / "apt" / suite.name  # apt resolves relative Dir:: paths against /
        self.sources = self.root / "sources.list"
        self.lists = self.root / "lists"
        self.cache = self.root / "cache"

    def opts(self) -> list[str]:
        return ["-o", f"Dir::Etc::sourcelist={self.sources}", "-o", "Dir::Etc::sourceparts=-",
                "-o", f"Dir::State::Lists={self.lists}", "-o", f"Dir::Cache={self.cache}",
                "-o", "APT::Get::List-Cleanup=0", "-o", "Debug::NoLocking=1"]

    def update(self) -> None:
        if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
            raise SystemExit("the lab needs Debian's apt-get and dpkg-deb")
        (self.lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.cache / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        self.sources.write_text(self.suite.sources_line())
        if not any(self.lists.glob("*_Packages*")):
            log(f"apt-get update ({self.suite.name}, private lists under {self.root})")
            sh(["apt-get", *self.opts(), "update"], timeout=600)

    def candidate(self, package: str) -> str | None:
        """The version apt-get download would fetch from this suite, None if the suite has no such package."""
        self.update()
        out = sh(["apt-cache", *self.opts(), "policy", package], timeout=120).stdout
        m = re.search(r"Candidate:\s*(\S+)", out)
        return None if not m or m.group(1) == "(none)" else m.group(1)

    def download(self, package: str, dest: Path) -> Path:
        """``apt-get download package`` into dest (once); returns the .deb."""
        self.update()
        dest.mkdir(parents=True, exist_ok=True)
        have = sorted(dest.glob(f"{package}_*.deb"))
        if have:
            return have[-1]
        log(f"apt-get download {package} ({self.suite.name})")
        sh(["apt-get", *self.opts(), "download", package], cwd=dest, timeout=1200)
        have = sorted(dest.glob(f"{package}_*.deb"))
        if not have:
            raise SystemExit(f"apt-get download {package} from {self.suite.name} left no .deb in {dest}")
        return have[-1]


def deb_field(deb: Path, name: str) -> str:
    return sh(["dpkg-deb", "-f", str(deb), name]).stdout.strip()


def unpack(deb: Path, tree: Path, marker: Path) -> None:
    """``dpkg-deb -x`` (never installs); ``marker`` is a path inside the tree that exists once unpacked."""
    if marker.exists():
        return
    log(f"dpkg-deb -x {deb.name} (unpacked under {tree}, not installed)")
    tree.mkdir(parents=True, exist_ok=True)
    sh(["dpkg-deb", "-x", str(deb), str(tree)], timeout=900)
