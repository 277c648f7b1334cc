"""Installed as ``replaycompile.kernels`` (pyproject.toml's package-dir maps this top-level folder there).

Kernels know tensors: each fast path (CPU, Triton) sits beside its pure-torch ``*_reference.py``, its spec."""
