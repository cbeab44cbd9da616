#!/usr/bin/python3
"""rotor PyTorch reference: verify the C implementation, give a training-speed baseline, self-test.

  rotor_ref.py check DIR [DIR...] [--rtol 1e-4] [--threads 1]
      Each DIR holds config.json, model.safetensors, batch.safetensors (input_ids, labels; truncate
      where carried states cross a window boundary, docs/models.md §carried-states) and the C
      code's expected.safetensors (logits, loss, grad.<param>). The reference recomputes them in float64
      with naive mixers (token recurrences for GLA/GDN/DeltaNet, explicit T x T softmax for FoX) and autograd.
      Exit 0 when every case passes.
  rotor_ref.py bench --config config.json --batch B --seq T --steps N [--warmup W] [--threads 2] [--compile]
      AdamW training steps in float32 with the chunked mixers (through torch.compile with --compile);
      prints one JSON line with tokens/s, the torch version and its BLAS.
  rotor_ref.py make-case --config config.json --out DIR [--batch B] [--seq T] [--seed S] [--std S]
      Writes a check case whose expected.safetensors comes from this reference (for testing tools).
  rotor_ref.py loglik --ckpt DIR --samples FILE [--atol 1e-4]
      Recomputes the per-request log-likelihoods of a `rotor eval --log-samples` file.
  rotor_ref.py selftest [--threads 1]
      Fast-vs-naive agreement in float64, rotation properties, document masking, check round trip.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ref_fast  # noqa: E402
import ref_model as rm  # noqa: E402
import ref_safetensors as st  # noqa: E402


# ----------------------------------------------------------------------------- check

def reference_outputs(cfg, weights, input_ids, labels, truncate=None):
    """float64 naive forward + backward (truncate: the window boundaries of carried states,
    docs/models.md §carried-states). Returns (logits, loss, {param name: grad})."""
    model = rm.RotorLM(cfg).double()
    model.load_state_dict({n: torch.from_numpy(w).double() for n, w in weights.items()}, strict=True)
    logits = model(input_ids, naive=True, labels=labels, truncate=truncate)
    if model.head == "classifier":  # one class per row, at its labeled token
        row_labels = torch.stack([lab[lab != -100][0] for lab in labels])
        loss = F.cross_entropy(logits, row_labels)
    else:
        loss = rm.lm_loss(logits, labels)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    return logits.detach(), loss.detach(), grads


def rel_norm(got, ref):
    return float(torch.linalg.norm((got - ref).flatten()) / max(float(torch.linalg.norm(ref.flatten())), 1e-8))


def check_case(case_dir, rtol):
    """Returns (ok, summary line, [failure details])."""
    fails = []
    with open(os.path.join(case_dir, "config.json")) as f:
        cfg = json.load(f)
    weights, _ = st.load(os.path.join(case_dir, "model.safetensors"))
    batch, _ = st.load(os.path.join(case_dir, "batch.safetensors"))
    expected, _ = st.load(os.path.join(case_dir, "expected.safetensors"))

    shapes = {n: tuple(p.shape) for n, p in rm.RotorLM(cfg).state_dict().items()}
    for n in sorted(set(shapes) - set(weights)):
        fails.append(f"model.safetensors lacks {n} {list(shapes[n])}")
    for n in sorted(set(weights) - set(shapes)):
        fails.append(f"model.safetensors has unexpected {n}")
    for n in sorted(set(shapes) & set(weights)):
        if tuple(weights[n].shape) != shapes[n]:
            fails.append(f"model.safetensors {n} has shape {list(weights[n].shape)}, expected {list(shapes[n])}")
    if fails:
        return False, "weights do not match the config", fails

    ids = torch.from_numpy(batch["input_ids"]).long()
    labels = torch.from_numpy(batch["labels"]).long()
    truncate = torch.from_numpy(batch["truncate"]).bool() if "truncate" in batch else None
    logits, loss, grads = reference_outputs(cfg, weights, ids, labels, truncate)

    stats = {}
    if "loss" not in expected:
        fails.append("expected.safetensors lacks loss")
    else:
        got = float(np.asarray(expected["loss"], dtype=np.float64).reshape(-1)[0])
        stats["loss_rel"] = abs(got - float(loss)) / max(abs(float(loss)), 1e-8)
        if not stats["loss_rel"] <= rtol:
            fails.append(f"loss {got:.8g} vs reference {float(loss):.8g} (rel {stats['loss_rel']:.3g})")
    if "logits" not in expected:
        fails.append("expected.safetensors lacks logits")
    elif tuple(expected["logits"].shape) != tuple(logits.shape):
        fails.append(f"logits shape {list(expected['logits'].shape)}, expected {list(logits.shape)}")
    else:
        got = torch.from_numpy(expected["logits"]).double()
        stats["logits_rel"] = float((got - logits).abs().max() / max(float(logits.abs().max()), 1e-8))
        if not stats["logits_rel"] <= rtol:
            fails.append(f"logits max-abs error / max |logit| = {stats['logits_rel']:.3g}")

    exp_grads = {n[len("grad."):]: t for n, t in expected.items() if n.startswith("grad.")}
    for n in sorted(set(grads) - set(exp_grads)):
        fails.append(f"expected.safetensors lacks grad.{n}")
    for n in sorted(set(exp_grads) - set(grads)):
        fails.append(f"expected.safetensors has grad.{n}, which is not a trainable parameter")
    worst, worst_name = 0.0, "-"
    for n in sorted(set(grads) & set(exp_grads)):
        g = exp_grads[n]
        if tuple(g.shape) != tuple(grads[n].shape):
            fails.append(f"grad.{n} shape {list(g.shape)}, expected {list(grads[n].shape)}")
            continue
        err = rel_norm(torch.from_numpy(g).double(), grads[n])
        if not err <= rtol:
            fails.append(f"grad.{n} norm-relative error {err:.3g}")
        if not err <= worst:  # also catches NaN
            worst, worst_name = err, n
    stats["grad_rel"] = worst
    line = " ".join(f"{k}={v:.3g}" for k, v in stats.items()) + f" (worst grad {worst_name})"
    return not fails, line, fails


def cmd_check(args):
    torch.set_num_threads(args.threads)
    all_ok = True
    for case in args.dirs:
        try:
            ok, line, fails = check_case(case, args.rtol)
        except Exception as e:  # a broken case is a failed case, the others still run
            ok, line, fails = False, f"error: {type(e).__name__}: {e}", []
        all_ok &= ok
        print(f"{'PASS' if ok else 'FAIL'} {case}: {line}")
        for f in fails:
            print(f"    {f}")
    return 0 if all_ok else 1


# ----------------------------------------------------------------------------- make-case

def make_case(cfg, out, batch, seq, seed, std):
    """A check case from this reference: the init of docs/models.md (linear std `std`), random tokens with a few BOS
    tokens and ignored labels, expected outputs from the float64 naive reference."""
    gen = torch.Generator().manual_seed(seed)
    model = rm.RotorLM(cfg)
    rm.init_weights(model, gen, std)
    weights = {n: p.detach().float().numpy() for n, p in model.state_dict().items()}
    V = cfg["vocab_size"]
    ids = torch.randint(0, V, (batch, seq + 1), generator=gen)
    ids[:, 0] = cfg["bos_token_id"]
    ids[torch.rand(batch, seq + 1, generator=gen) < 0.05] = cfg["bos_token_id"]
    inputs, labels = ids[:, :-1].clone(), ids[:, 1:].clone()
    labels[torch.rand(batch, seq, generator=gen) < 0.1] = -100
    logits, loss, grads = reference_outputs(cfg, weights, inputs, labels)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    st.save(os.path.join(out, "model.safetensors"), weights)
    st.save(os.path.join(out, "batch.safetensors"), {"input_ids": inputs.numpy(), "labels": labels.numpy()})
    exp = {"logits": logits.float().numpy(), "loss": loss.float().reshape(1).numpy()}
    exp.update({f"grad.{n}": g.float().numpy() for n, g in grads.items()})
    st.save(os.path.join(out, "expected.safetensors"), exp, {"source": "rotor_ref.py make-case"})


def cmd_make_case(args):
    with open(args.config) as f:
        cfg = json.load(f)
    make_case(cfg, args.out, args.batch, args.seq, args.seed, args.std)
    print(f"wrote {args.out}")
    return 0


# ----------------------------------------------------------------------------- bench

def torch_blas():
    """The BLAS torch was built with and the CPU kernels it dispatches to, from its build
    configuration ("mkl, AVX2")."""
    show = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", show)
    isa = re.search(r"CPU capability usage: (\w+)", show)
    return ", ".join(m.group(1) for m in (blas, isa) if m) or "unknown"


def cmd_bench(args):
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # decayed gates / softmax tails underflow; denormals stall the CPU
    torch.manual_seed(args.seed)
    with open(args.config) as f:
        cfg = json.load(f)
    model = rm.RotorLM(cfg)
    rm.init_weights(model, torch.Generator().manual_seed(args.seed))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if not rm.no_weight_decay(n, p)], "weight_decay": 0.1},
              {"params": [p for n, p in named if rm.no_weight_decay(n, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    data = torch.randint(0, cfg["vocab_size"], (args.warmup + args.steps, args.batch, args.seq + 1))
    forward = model
    if args.compile:
        if not hasattr(torch, "compile"):
            sys.exit(f"rotor_ref.py bench --compile: torch {torch.__version__} has no torch.compile")
        forward = torch.compile(model)  # compiled by the warm-up steps

    def step(tokens):
        logits = forward(tokens[:, :-1], naive=False)
        loss = rm.lm_loss(logits.float(), tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())

    for i in range(args.warmup):
        step(data[i])
    t0 = time.perf_counter()
    for i in range(args.steps):
        loss = step(data[args.warmup + i])
        print(f"step {i + 1}/{args.steps} loss {loss:.4f}", file=sys.stderr)
    dt = (time.perf_counter() - t0) / args.steps
    print(json.dumps({
        "tokens_per_s": args.batch * args.seq / dt, "step_ms": dt * 1e3,
        "mixer": cfg["model_type"], "pe": cfg["position_embedding"]["type"],
        "batch": args.batch, "seq": args.seq, "params": sum(p.numel() for p in model.parameters()),
        "threads": args.threads, "torch": torch.__version__, "compile": args.compile,
        "blas": torch_blas(),
    }))
    return 0


# ----------------------------------------------------------------------------- selftest

SEL_FULL = {"type": "selective_rope", "phi_parametrization": "full-rank", "phi_proj_rank": 32,
            "skip_conv": False, "conv_act": "silu", "use_bias": True, "use_gate": True,
            "gate_parametrization": "standard", "temp_type": "rope", "temp_theta": 500000.0,
            "temp_max": 1.0, "temp_grad": False, "d_conv": 4}
SEL_LOW = dict(SEL_FULL, phi_parametrization="low-rank", phi_proj_rank=8, skip_conv=True, conv_act=None,
               use_bias=False, temp_type="rfa", temp_theta=0.995, temp_max=2.0, temp_grad=True)
SEL_PLAIN = dict(SEL_FULL, use_bias=False, use_gate=False, conv_act=None)
PES = {"nope": {"type": "nope"}, "rope": {"type": "rope", "theta": 500000.0},
       "sel-full": SEL_FULL, "sel-low": SEL_LOW, "sel-plain": SEL_PLAIN}


def tiny_config(mixer, pe, doc_mask=True, variant=0):
    """A tiny config of one stack; `variant` toggles the optional features (short conv / FoX-Pro /
    Transformer QK-norm)."""
    cfg = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_heads": 2, "hidden_ratio": 4,
           "intermediate_size": 48, "hidden_act": "swish", "norm_eps": 1e-6, "initializer_range": 0.02,
           "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False,
           "max_position_embeddings": 2048, "doc_mask": doc_mask, "position_embedding": pe}
    if mixer == "gla":
        cfg.update(model_type="gla", expand_k=0.5, expand_v=1, use_short_conv=bool(variant % 2), conv_size=4,
                   use_output_gate=True, gate_logit_normalizer=16, gate_low_rank_dim=16, clamp_min=None,
                   feature_map=None, attn_mode="chunk")
    elif mixer == "gdn":
        cfg.update(model_type="gated_deltanet", head_dim=16, expand_v=1, use_gate=True,
                   use_short_conv=not variant % 2, conv_size=4, allow_neg_eigval=False, num_v_heads=None)
    elif mixer == "transformer":
        cfg.update(model_type="transformer", qk_norm=bool(variant % 2), rope_theta=500000.0, qkv_bias=False,
                   window_size=None, num_kv_heads=None)
    elif mixer == "lru":  # docs/models.md §lru; variant: the paper's default ring or a narrow one
        cfg.update(model_type="lru", state_size=8, r_min=0.9 if variant % 2 else 0.0,
                   r_max=0.999 if variant % 2 else 0.99, max_phase=0.314 if variant % 2 else 6.28)
    elif mixer == "rotrnn":  # docs/models.md §rotrnn; variant: one head or two
        cfg.update(model_type="rotrnn", state_size=8, num_heads=1 + variant % 2, gamma_min=0.9, gamma_max=0.999,
                   max_phase=6.28)
    elif mixer == "mamba2":  # docs/models.md §mamba2; variant: one group or two
        cfg.update(model_type="mamba2", expand=2, head_dim=8, state_size=8, n_groups=1 + variant % 2,
                   use_conv_bias=bool(variant % 2))
    elif mixer == "deltanet":
        cfg.update(model_type="delta_net", expand_k=1, expand_v=1, use_short_conv=not variant % 2,
                   use_gate=bool(variant % 2), conv_size=4, use_beta=True, use_output_norm=True, qk_norm="l2",
                   qk_activation="silu")
    else:
        pro = bool(variant % 2)
        cfg.update(model_type="forgetting_transformer", qk_norm=pro, use_output_gate=pro, use_output_norm=pro,
                   use_k_shift=pro, use_v_shift=not pro, qkv_bias=False, window_size=None)
    return cfg


class SelfTest:
    def __init__(self):
        self.failed = 0

    def expect(self, name, err, tol):
        ok = err <= tol
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {err:.2e} (tol {tol:.0e})")


def _rand_starts(B, T, gen):
    start = torch.rand(B, T, generator=gen) < 0.03
    start[:, 0] = True
    start[0, 64] = True  # a document starting exactly at a chunk boundary
    return start


def _compare_cores(t, name, naive_fn, fast_fn, inputs):
    """Fast vs naive core in float64: outputs and input gradients."""
    xs = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    ys = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    a, b = naive_fn(*xs), fast_fn(*ys)
    scale = max(1.0, float(a.abs().max()))
    t.expect(f"{name} forward", float((a - b).abs().max()) / scale, 1e-8)
    w = torch.randn_like(a)
    (a * w).sum().backward()
    (b * w).sum().backward()
    gerr = max(rel_norm(y.grad, x.grad) for x, y in zip(xs, ys) if x.grad is not None)
    t.expect(f"{name} backward", gerr, 1e-8)


def selftest_cores(t):
    gen = torch.Generator().manual_seed(0)
    B, T, H, K, V = 2, 150, 2, 8, 6  # 3 chunks, the last one partial

    def rn(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    for docs in (False, True):
        start = _rand_starts(B, T, gen) if docs else None
        sfx = " docs" if docs else ""
        q, k, v = rn(B, T, H, K) * K ** -0.5, rn(B, T, H, K), rn(B, T, H, V)
        log_a = torch.nn.functional.logsigmoid(rn(B, T, H, K) * 3)  # strong, uneven per-channel decays
        _compare_cores(t, "gla chunk vs recurrent" + sfx, lambda *a: rm.gla_naive(*a, start),
                       lambda *a: ref_fast.gla_chunk(*a, start), [q, k, v, log_a])
        kn = rm.l2_norm(rn(B, T, H, K))
        g = -torch.exp(rn(H) * 0.5) * torch.nn.functional.softplus(rn(B, T, H))
        beta = torch.sigmoid(rn(B, T, H))
        _compare_cores(t, "gdn chunk vs recurrent" + sfx, lambda *a: rm.gdn_naive(*a, start),
                       lambda *a: ref_fast.gdn_chunk(*a, start), [q, kn, v, g, beta])
        _compare_cores(t, "deltanet chunk (g = 0) vs recurrent" + sfx, lambda *a: rm.delta_naive(*a, start),
                       lambda q_, k_, v_, b_: ref_fast.gdn_chunk(q_, k_, v_, torch.zeros_like(b_), b_, start),
                       [q, kn, v, beta])
        log_f = torch.nn.functional.logsigmoid(rn(B, T, H) + 2)
        _compare_cores(t, "fox parallel vs explicit" + sfx, lambda *a: rm.fox_naive(*a, start),
                       lambda *a: ref_fast.fox_parallel(*a, start), [q, k, rn(B, T, H, K), log_f])
        _compare_cores(t, "gateless attention parallel vs explicit" + sfx,
                       lambda *a: rm.fox_naive(*a, None, start),
                       lambda *a: ref_fast.fox_parallel(*a, None, start), [q, k, rn(B, T, H, K)])
        dt = torch.nn.functional.softplus(rn(B, T, H)) * 0.02  # decays near 0.98 a step: states
        A = -torch.exp(rn(H) * 0.3)  # carried over a whole chunk still weigh
        _compare_cores(t, "mamba2 ssd chunk vs recurrent" + sfx, lambda *a: rm.ssd_naive(*a, start),
                       lambda *a: ref_fast.ssd_chunk(*a, start), [v, dt, A, rn(B, T, H, K), rn(B, T, H, K)])
        C = H * K  # complex channels with decays from 0.99 to 0.25 a step and any phase
        b = torch.complex(rn(B, T, C), rn(B, T, C))
        _compare_cores(t, "lru/rotrnn scan chunk vs recurrent" + sfx, lambda *a: rm.cdiag_naive(*a, start),
                       lambda *a: ref_fast.cdiag_chunk(*a, start),
                       [b, -torch.rand(C, generator=gen, dtype=torch.float64) * 1.4 - 0.01, rn(C) * 3])

    # log-space chunked GLA stays finite in float32 with extreme decays (exp(-30 * 64) underflows safely)
    q, k, v = (torch.randn(1, 128, 1, 8, generator=gen) for _ in range(3))
    o = ref_fast.gla_chunk(q, k, v, torch.full((1, 128, 1, 8), -30.0))
    t.expect("gla chunk float32 finite with log decay -30/step", float(not torch.isfinite(o).all()), 0)


def selftest_models(t):
    """Whole models of every mixer x pe variant: fast vs naive logits and parameter gradients."""
    gen = torch.Generator().manual_seed(1)
    B, T = 2, 140

    def naive_vs_fast(cfg, name):
        """The model's naive and fast forms: the same logits and gradients of the LM loss."""
        model = rm.RotorLM(cfg).double()
        rm.init_weights(model, gen, std=0.3)
        ids = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen)
        outs = []
        for naive in (True, False):
            model.zero_grad()
            logits = model(ids, naive=naive)
            rm.lm_loss(logits, ids.roll(-1, 1)).backward()
            outs.append((logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                           if p.requires_grad}))
        (a, ga), (b, gb) = outs
        t.expect(name + " logits", float((a - b).abs().max() / a.abs().max()), 1e-8)
        t.expect(name + " grads", max(rel_norm(gb[n], ga[n]) for n in ga), 1e-8)

    for mixer in ("gla", "gdn", "fox", "transformer", "deltanet"):
        for i, (pe_name, pe) in enumerate(PES.items()):
            cfg = tiny_config(mixer, pe, doc_mask=bool(i % 2 == 0), variant=i)
            naive_vs_fast(cfg, f"model {mixer}/{pe_name} doc_mask={cfg['doc_mask']} variant={i % 2} fast vs naive")
    # Mamba2, LRU and RotRNN (NoPE only): the recurrences against their chunked forms (RotRNN's
    # naive form runs in the state's own basis, the chunked scan in the basis of P)
    for mixer in ("mamba2", "lru", "rotrnn"):
        for i in range(4):
            cfg = tiny_config(mixer, PES["nope"], doc_mask=bool(i // 2), variant=i)
            naive_vs_fast(cfg, f"model {mixer} doc_mask={cfg['doc_mask']} variant={i % 2} chunked vs recurrence")


def selftest_properties(t):
    gen = torch.Generator().manual_seed(2)
    B, T, H, dk, d = 2, 40, 2, 16, 32
    q, k = torch.randn(B, T, H, dk, generator=gen, dtype=torch.float64), torch.randn(B, T, H, dk, generator=gen,
                                                                                     dtype=torch.float64)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    ids = torch.randint(2, 64, (B, T), generator=gen)
    ids[:, 17] = 1
    cfg = tiny_config("gdn", PES["rope"])
    docs = rm.Docs(ids, cfg)

    def norm_err(a, b):
        return float((a.norm(dim=-1) - b.norm(dim=-1)).abs().max())

    qr, kr = rm.apply_rope(q, k, docs, 500000.0)
    t.expect("rope preserves norms", max(norm_err(qr, q), norm_err(kr, k)), 1e-12)
    for name in ("sel-full", "sel-low"):
        rot = rm.SelectiveRoPE(PES[name], d, H, dk).double()
        for p in rot.parameters():
            with torch.no_grad():
                p.normal_(0, 1.0, generator=gen)
        for naive in (True, False):
            qs, ks = rot(q, k, x, docs, naive)
            t.expect(f"selective rope {name} preserves norms (naive={naive})",
                     max(norm_err(qs, q), norm_err(ks, k)), 1e-12)

    # Selective RoPE with a zero phi projection and bias exp(0)=1 accumulates Phi_t = t+1 per
    # document: with 'rope' temperatures it must give the same q.k scores as RoPE.
    pe = dict(SEL_FULL, use_gate=False)
    rot = rm.SelectiveRoPE(pe, d, H, dk).double()
    with torch.no_grad():
        rot.phi_proj.weight.normal_(generator=gen)
        rot.phi_proj.scalar.zero_()
        rot.phi_conv1d.weight.normal_(generator=gen)
        rot.temperature.copy_(rm.rotary_temperature(pe, dk))  # float64 temperatures, not float32-rounded
    qs, ks = rot(q, k, x, docs, False)

    def scores(a, b):
        return torch.einsum("bihd,bjhd->bhij", a, b)
    t.expect("selective rope (zero phi, unit bias) scores == rope scores",
             float((scores(qs, ks) - scores(qr, kr)).abs().max()), 1e-10)

    # Document masking: a row [doc A ; doc B] gives the logits of A and B run alone.
    for mixer, pe_name in (("gla", "sel-full"), ("gdn", "rope"), ("fox", "sel-low"), ("transformer", "rope")):
        cfg = tiny_config(mixer, PES[pe_name], doc_mask=True, variant=1)
        model = rm.RotorLM(cfg).double()
        rm.init_weights(model, gen, std=0.3)
        ids = torch.randint(2, 64, (1, 80), generator=gen)
        ids[0, 0] = ids[0, 30] = 1
        for naive in (True, False):
            with torch.no_grad():
                both = model(ids, naive)
                err = max(float((both[:, :30] - model(ids[:, :30], naive)).abs().max()),
                          float((both[:, 30:] - model(ids[:, 30:], naive)).abs().max()))
            t.expect(f"doc mask {mixer}/{pe_name} (naive={naive}): packed == separate", err, 1e-10)


def selftest_check_roundtrip(t):
    """`check` passes on a reference-made case and fails on perturbed / incomplete ones."""
    tmp = tempfile.mkdtemp(prefix="rotor_ref_")
    try:
        good = os.path.join(tmp, "good")
        make_case(tiny_config("gla", PES["sel-low"], variant=1), good, 2, 24, 3, 0.1)
        ok, line, fails = check_case(good, 1e-4)
        t.expect(f"check passes on a reference case [{line}]", float(not ok), 0)
        exp, meta = st.load(os.path.join(good, "expected.safetensors"))
        variants = {
            "perturbed grad": lambda e: e["grad.model.layers.0.attn.rotary.temperature"].__imul__(1.001),
            "perturbed logits": lambda e: e["logits"].__setitem__((0, 3, 5), e["logits"][0, 3, 5] + 0.01),
            "missing grad": lambda e: e.pop("grad.model.layers.1.attn.q_proj.weight"),
            "extra grad": lambda e: e.__setitem__("grad.model.bogus", np.zeros(1, np.float32)),
        }
        for name, edit in variants.items():
            bad = os.path.join(tmp, name.replace(" ", "_"))
            shutil.copytree(good, bad)
            e = {n: a.copy() for n, a in exp.items()}
            edit(e)
            st.save(os.path.join(bad, "expected.safetensors"), e, meta)
            ok, _, fails = check_case(bad, 1e-4)
            t.expect(f"check fails on a {name} case ({fails[0] if fails else 'no failure reported'})",
                     float(ok), 0)
    finally:
        shutil.rmtree(tmp)


def cmd_selftest(args):
    torch.set_num_threads(args.threads)
    t0 = time.time()
    t = SelfTest()
    selftest_cores(t)
    selftest_models(t)
    selftest_properties(t)
    selftest_check_roundtrip(t)
    print(f"selftest: {t.failed} failure(s) in {time.time() - t0:.1f} s")
    return 1 if t.failed else 0


# ----------------------------------------------------------------------------- loglik

def cmd_loglik(args):
    """Recomputes every request of a `rotor eval --log-samples` file with the float64 naive
    model of a checkpoint: the continuation log-likelihood of the request's tokens (left-
    truncated to the model's context as the harness does) and whether every continuation
    token is the argmax. Exit 0 when every |ll difference| <= --atol and is_greedy agrees
    wherever the top-2 logit gap is not a near tie."""
    torch.set_num_threads(args.threads)
    with open(os.path.join(args.ckpt, "config.json")) as f:
        cfg = json.load(f)
    weights, _ = st.load(os.path.join(args.ckpt, "model.safetensors"))
    model = rm.RotorLM(cfg).double()
    model.load_state_dict({n: torch.from_numpy(w).double() for n, w in weights.items()}, strict=True)
    max_len = cfg["max_position_embeddings"]
    worst, n, bad = 0.0, 0, 0
    with torch.no_grad(), open(args.samples) as f:
        for line in f:
            r = json.loads(line)
            seq = r["tokens"][-(max_len + 1):]
            n_cont = min(r["n_continuation"], len(seq) - 1)
            logits = model(torch.tensor([seq[:-1]]), naive=True)[0]
            logp = torch.log_softmax(logits, dim=-1)
            targets = torch.tensor(seq[1:])
            pos = torch.arange(len(seq) - 1 - n_cont, len(seq) - 1)
            ll = float(logp[pos, targets[pos]].sum())
            top2 = logits[pos].topk(2, dim=-1).values
            clear = bool(((top2[:, 0] - top2[:, 1]) > 1e-6).all())
            greedy = bool((logits[pos].argmax(dim=-1) == targets[pos]).all())
            d = abs(ll - r["ll"])
            worst = max(worst, d)
            if d > args.atol or (clear and greedy != r["is_greedy"]):
                bad += 1
                if bad <= 5:
                    print(f"FAIL {r['task']} doc {r['doc']} choice {r['choice']}: ll {r['ll']:.8f} vs reference "
                          f"{ll:.8f}, is_greedy {r['is_greedy']} vs {greedy}")
            n += 1
    print(f"loglik: {n} requests, max |ll difference| {worst:.3g}, {bad} mismatch(es)")
    return 1 if bad or n == 0 else 0


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="compare C outputs with the float64 naive reference")
    c.add_argument("dirs", nargs="+")
    c.add_argument("--rtol", type=float, default=1e-4)
    c.add_argument("--threads", type=int, default=1, help="small tensors: one thread is fastest")
    b = sub.add_parser("bench", help="float32 AdamW training speed with the chunked mixers")
    b.add_argument("--config", required=True)
    b.add_argument("--batch", type=int, required=True)
    b.add_argument("--seq", type=int, required=True)
    b.add_argument("--steps", type=int, required=True)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--compile", action="store_true", help="the model through torch.compile (PyTorch 2)")
    m = sub.add_parser("make-case", help="write a check case computed by this reference")
    m.add_argument("--config", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--batch", type=int, default=2)
    m.add_argument("--seq", type=int, default=32)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--std", type=float, default=None, help="init std of weights (default initializer_range)")
    g = sub.add_parser("loglik", help="recompute the requests of a rotor eval --log-samples file")
    g.add_argument("--ckpt", required=True)
    g.add_argument("--samples", required=True)
    g.add_argument("--atol", type=float, default=1e-4)
    g.add_argument("--threads", type=int, default=1)
    s = sub.add_parser("selftest", help="fast-vs-naive agreement and properties (< 60 s)")
    s.add_argument("--threads", type=int, default=1, help="small tensors: one thread is fastest")
    args = p.parse_args(argv)
    commands = {"check": cmd_check, "bench": cmd_bench, "make-case": cmd_make_case, "loglik": cmd_loglik,
                "selftest": cmd_selftest}
    return commands[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
