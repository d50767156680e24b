"""The real-kernel lab (see lab/README.md): ``python -m lab run``."""
