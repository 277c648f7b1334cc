"""The attention-mask verification of one analysed graph, across its calls (the graph tools are in
``replaycompile.passes.mask_probe``: the mask subgraphs built once, evaluated here on each call's inputs).

Tree attention is right only where the model's mask is causal-with-padding. ``MaskVerifier.check`` says, per
call, whether the call's masks are: structurally (once per graph, at the call's length and a long virtual one;
a sliding window per site is located by bisection and left in ``take_windows()`` for the caller, which has
its attentions rewritten to apply it), or, for masks the structured probe cannot follow, by a full B x T x T
evaluation once per input shape. Each call's padding mask is checked in O(B x T) first (0/1 values; holes are
verified in full on that mask). Graph facts, evaluated on chosen inputs: the verifier never sees a batch's plan.
"""

from __future__ import annotations

import logging

import torch
import torch.fx as fx

from replaycompile.passes import mask_probe
from replaycompile.passes.nodes import count, subgraph_module
from replaycompile.passes.region import GraphAnalysis

log = logging.getLogger("replaycompile")

# A mask the structured probe cannot rewrite is verified by a full B x T x T evaluation, once per input shape,
# up to this many elements; beyond it the graph is declined.
MAX_MASK_PROBE_ELEMENTS = 1 << 28


class MaskVerifier:
    """The masks of an analysed graph (``a.reason is None``). Where they are causal only within sliding windows or
    chunks, the ``check`` that finds it leaves them for ``take_windows()`` (attention node -> W, or -C for
    attention chunks of C tokens), once: the caller has the graph rewritten to apply them before it runs that
    call. The verifier never rewrites anything itself."""

    def __init__(self, gm: fx.GraphModule, a: GraphAnalysis):
        self.a = a
        self._found: dict | None = None     # windows found by the last check, not taken yet
        self.sites = [s for s in a.attention if s.mask is not None]
        masks = [s.mask for s in self.sites]
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self._am_pos = placeholders.index(a.attention_mask) if a.attention_mask is not None else None
        self._ids_pos = placeholders.index(a.ids)
        self.full_gm = subgraph_module(gm, masks) if masks else None   # the mask subgraph, every (q, k)
        # the mask subgraph on chosen positions (mask_probe.py), or None where it cannot be rewritten
        self.structured = mask_probe.structured_mask_module(gm, masks, a.seq, a.batch, a.attention_mask) \
            if masks else None
        self.probed: set = set()            # input shapes whose mask a full evaluation verified
        self.verified_len = 0               # the longest virtual sequence length verified structurally
        self.length_limit: str | None = None  # why sequences longer than that are not packed
        self.windows: list | None = None    # each mask site's verified window W or chunk -C (0: none), once found
        self.verifications = 0              # how often a mask was verified (structured: once per graph)

    def check(self, args, am) -> tuple[str | None, bool]:
        """(reason or None, for good): whether this call's masks are causal-with-padding."""
        if am is not None:  # O(B * T), every call: what the verification assumes of the padding mask
            why = mask_probe.mask_values(am)
            holes = mask_probe.padding_runs(am) if why is None and self.full_gm is not None else None
            if holes is not None:
                why = self._check_with_holes(args, am, holes)
            if why is not None:
                return why, False
        return self._check(args, am)

    def take_windows(self) -> dict | None:
        """The sliding windows or chunks the last ``check`` found (once; None when it found none)."""
        found, self._found = self._found, None
        return found

    def _mask_args(self, args, probe):
        call = list(args)
        if self._am_pos is not None:  # the probe on the model's device: the mask graph mixes it with CUDA inputs
            call[self._am_pos] = probe.to(device=args[self._am_pos].device, dtype=args[self._am_pos].dtype)
        return call

    def _device(self, args) -> torch.device:
        return args[self._ids_pos].device

    def _structured_check(self, args, am, tv: int, windows=None) -> str | None:
        """The structured probe at virtual length ``tv``: None if causal-with-padding there (within each site's
        window, given ``windows``)."""
        probe = mask_probe.padding_probes(tv) if am is not None else torch.ones(1, tv, dtype=torch.long)
        index = mask_probe.probe_positions(tv, mask_probe.probe_boundaries(tv) +
                                           mask_probe.window_boundaries(tv, windows or []))
        with torch.no_grad():
            outs = self.structured(*self._mask_args(args, probe), index.to(self._device(args)), probe.shape[0])
        return mask_probe.check_masks(outs, self.sites, probe, index, index, windows)

    def _site_windows(self, args, hi: int) -> list:
        """Each mask site's sliding window below ``hi`` (0: none), by bisection on the distance at which a query
        of an unpadded row stops seeing key 0; sites reading one mask value share the search."""
        found: dict = {}

        def hidden_at(i: int, d: int) -> bool:
            probe = torch.ones(1, d + 1, dtype=torch.long)
            with torch.no_grad():
                outs = self.structured(*self._mask_args(args, probe),
                                       torch.tensor([0, d], device=self._device(args)), 1)
            vis = mask_probe.visible(outs[i])
            # not a 0/-inf mask: no window to find; the check names the bias
            return vis is not None and not bool(vis[..., 1, 0].all())

        out = []
        for i, site in enumerate(self.sites):
            if site.mask not in found:
                found[site.mask] = mask_probe.window_of(lambda d, i=i: hidden_at(i, d), hi)
            out.append(found[site.mask])
        return out

    def _accept_windows(self, args, am, t: int, hi: int) -> bool:
        """A mask that is not causal at ``hi`` may be causal within a sliding window per site (HF builds a full and
        a sliding mask and each layer reads one): find each site's window, verify the whole mask against it at
        ``hi`` and at the call's length, and have the attentions apply those windows by row position."""
        found = self._site_windows(args, hi)
        if not any(found):
            return False
        # the distance at which key 0 is hidden is a sliding window's W, or an attention chunk's C (Llama 4:
        # query q sees the keys of its own chunk, counted from the row's first real token), entered as -C
        for windows in (found, [-w for w in found]):
            if all(self._structured_check(args, am, tv, windows) is None for tv in sorted({t, hi})):
                break
        else:
            return False
        self.windows = windows
        self._found = {s.node: w for s, w in zip(self.sites, windows) if w != 0}
        if windows is found:
            count("sliding_window_sites", sum(1 for w in windows if w > 0))
            log.info("replay: sliding windows %s at the attention sites; packed with the window applied by row "
                     "position", sorted(set(windows)))
        else:
            count("attention_chunk_sites", sum(1 for w in windows if w < 0))
            log.info("replay: attention chunks of %s tokens at the attention sites; packed with the chunks applied "
                     "by row position", sorted({-w for w in windows if w}))
        return True

    def _check(self, args, am) -> tuple[str | None, bool]:
        """Verify that every attention mask is causal-with-padding. Returns (reason or None, for good).

        Structured: once per graph, at the call's length and a long virtual one. A mask that is causal only up to
        some length is located by bisection: calls up to that length are packed, longer ones run unpacked.
        Otherwise a full B x T x T evaluation per input shape."""
        if self.full_gm is None:
            return None, False
        ids = args[self._ids_pos]
        b, t = ids.shape
        if self.structured is not None:
            if t <= self.verified_len:
                return None, False
            if self.length_limit is not None:
                return f"{self.length_limit}, this one has {t}", False
            try:
                hi = max(t, mask_probe.LONG_CONTEXT)
                why = self._structured_check(args, am, hi, self.windows)
                if why is not None and self.windows is None and self._accept_windows(args, am, t, hi):
                    why = None
                if why is None:
                    self.verified_len = hi
                else:
                    lo, bad = 0, hi  # causal at lo (vacuous at 0), not at bad
                    while bad - lo > 1:
                        mid = (lo + bad) // 2
                        if self._structured_check(args, am, mid) is None:
                            lo = mid
                        else:
                            bad = mid
                    self.verified_len = lo
                    if lo < 2:
                        return why, True
                    self.length_limit = (f"{why}; sequences up to {lo} tokens are causal-with-padding under "
                                         f"this mask and are packed")
            except Exception:  # noqa: BLE001 - not evaluable on chosen positions: verify in full
                log.debug("replay: structured mask probe failed; verifying in full", exc_info=True)
                self.structured = None
                return self._check(args, am)
            self._verified()
            if t > self.verified_len:
                return f"{self.length_limit}, this one has {t}", False
            return None, False
        key = tuple(ids.shape)
        if key in self.probed:
            return None, False
        if b * t * t > MAX_MASK_PROBE_ELEMENTS:
            return (f"sequence length {t} x batch {b} is too large to verify the model's attention mask in full "
                    f"({b * t * t} elements > {MAX_MASK_PROBE_ELEMENTS}), and the mask uses the sequence length "
                    f"in a way the structured probe cannot follow"), True
        probes = [am if am is not None else torch.ones(b, t, dtype=torch.long)]
        if am is not None:
            gen = torch.Generator().manual_seed(0)
            lens = torch.randint(1, t + 1, (b,), generator=gen)
            probes += [(torch.arange(t)[None] >= (t - lens)[:, None]).long(),
                       (torch.arange(t)[None] < lens[:, None]).long()]
        for probe in probes:
            try:
                why = self._full_check(args, probe)
            except Exception as e:  # noqa: BLE001 - a mask that cannot be evaluated alone cannot be verified
                log.debug("replay: evaluating the attention masks in full failed", exc_info=True)
                return (f"the attention masks could not be evaluated on their own ({type(e).__name__}: {e}); "
                        f"they are not verified as causal-with-padding"), True
            if why is not None:
                return why, True
        self.probed.add(key)
        self._verified()
        return None, False

    def _verified(self) -> None:
        self.verifications += 1
        count("masks_verified")

    def _full_check(self, args, probe) -> str | None:
        """The model's mask evaluated on every (q, k) pair with ``probe`` as the padding mask."""
        every = torch.arange(probe.shape[1])
        with torch.no_grad():
            outs = self.full_gm(*self._mask_args(args, probe))
        return mask_probe.check_masks(outs, self.sites, probe, every, every, self.windows)

    def _check_with_holes(self, args, am, holes: str) -> str | None:
        """A padding mask with holes is outside what the structured probe stands for: evaluate the model's
        mask on it in full (this call only), within the size limit."""
        b, t = am.shape
        if b * t * t > MAX_MASK_PROBE_ELEMENTS:
            return (f"{holes}: only left/right padding is verified at this length "
                    f"({b * t * t} elements > {MAX_MASK_PROBE_ELEMENTS}); running unpacked")
        return self._full_check(args, am)
