"""Autocast rules for replaycompile's custom ops.

``torch.autocast`` does not touch a ``torch.library.custom_op`` unless the op registers a kernel for the
``AutocastCPU`` / ``AutocastCUDA`` dispatch keys; without one the op sees its inputs in whatever dtypes they come
(under bf16 autocast HF's rotated q and k are float32, v is bfloat16), and the op's own body runs with autocast
still on, so its matmuls would be cast while its fake says otherwise. ``torch.library.register_autocast`` casts to
one fixed dtype; the ops an attention op replaces (``scaled_dot_product_attention`` is on autocast's
lower-precision list on CPU and CUDA) cast to the *current* autocast dtype (bf16 or fp16). Hence ``register``:

* ``cast`` names the arguments autocast casts, as it casts SDPA's: floating tensors on the autocast device,
  float64 excepted, to ``torch.get_autocast_dtype(device)``;
* every other argument is left alone, and the op then runs with that device's autocast excluded (the pattern of
  ``torch._library.custom_ops.CustomOpDef.register_autocast``), so its body computes in its inputs' dtypes,
  exactly as its fake kernel says. Ops with nothing to cast (backward ops, the chunked LM head, whose dtype the
  rewrite makes explicit) register this too.

The kernel sits above the Python dispatch key, so it also runs while Dynamo fake-propagates and while AOT
autograd traces: the casts land in the traced graph as ``_to_copy`` nodes before the op, as SDPA's do.
"""

from __future__ import annotations

import torch

__all__ = ["register", "AUTOCAST_DEVICES"]

AUTOCAST_DEVICES = ("cpu", "cuda")

_libs: dict[str, torch.library.Library] = {}


def _lib(namespace: str) -> torch.library.Library:
    if namespace not in _libs:
        _libs[namespace] = torch.library.Library(namespace, "IMPL")
    return _libs[namespace]


def _eligible(x, device_type: str) -> bool:
    return (isinstance(x, torch.Tensor) and x.is_floating_point() and x.device.type == device_type
            and x.dtype is not torch.float64)


def register(qualname: str, cast: tuple[str, ...] = ()) -> None:
    """Autocast kernels (CPU and CUDA) for the custom op ``qualname`` ("namespace::name"): the arguments named
    in ``cast`` are cast to the current autocast dtype (floating tensors, float64 excepted; a list argument
    casts each element), then the op runs with autocast excluded."""
    namespace, name = qualname.split("::")
    overload = getattr(getattr(torch.ops, namespace), name).default
    names = [a.name for a in overload._schema.arguments]
    unknown = set(cast) - set(names)
    if unknown:
        raise ValueError(f"{qualname} has no argument(s) {sorted(unknown)}")
    positions = [names.index(c) for c in cast]
    for device_type in AUTOCAST_DEVICES:
        key = "Autocast" + torch._C._dispatch_key_for_device(device_type)
        excluded = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key))

        def kernel(_keyset, *args, _device_type=device_type, _excluded=excluded, **kwargs):
            if positions:
                dtype = torch.get_autocast_dtype(_device_type)

                def to(x):
                    if isinstance(x, (list, tuple)):
                        return type(x)(to(y) for y in x)
                    return x.to(dtype) if _eligible(x, _device_type) else x

                args = list(args)
                for i in positions:
                    if i < len(args):
                        args[i] = to(args[i])
                    elif names[i] in kwargs:
                        kwargs[names[i]] = to(kwargs[names[i]])
            with torch._C._ExcludeDispatchKeyGuard(_excluded):
                return overload(*args, **kwargs)

        _lib(namespace).impl(name, kernel, key, with_keyset=True)
