#!/usr/bin/env python3
"""The baseline of bench/step_bench.c for the nonlinear RNNs (docs/models.md §nonlinear-rnns, §lstm): one
optimizer step of the same model in PyTorch, the way the nnRNN authors' code runs it -- a
Python loop over time with one cuBLAS product h_{t-1} W^T per token (nnRNN/nnRNN_release
RNN_Cell.py, LSTM.py) -- and, for an LSTM config, also cuDNN's fused nn.LSTM. rotor runs each
recurrence as one persistent kernel per layer (kernels/ops/rnn.cu); this measures that choice.

For each rotor CONFIG.ini: `rotor info CONFIG --config-json` gives the model (the reference
model of tests/reference/ref_model.py: the same parameters, names and shapes as rotor's), at
the config's train.micro_batch x train.seq_len; uniform random tokens (pixel values for
linear inputs), labels at every position (language model) or at the last (classifier). A step
is zero_grad, forward, cross-entropy, backward, global-norm clipping at train.grad_clip and
torch.optim.RMSprop(alpha = train.rmsprop_alpha) at train.lr, in fp32 as the authors' code
(rotor computes in bf16 with fp32 states). After --warmup steps, the median of --steps steps,
each between two CUDA events. One line per config and variant:

    torch_rnn_step config=<name> variant=loop|cudnn shape=<B>x<T> ms=<x> tok_s=<y> params=<n>

    python3 bench/torch_rnn_step.py --rotor build/rotor [--steps N] [--warmup N]
                                    [--set section.key=value]... CONFIG.ini...

--set is passed to `rotor info` (e.g. model.vocab_size for a chars config whose text is not
there). Prints "skipped: ..." and exits 77 without torch or a GPU; --cpu times on the CPU
instead (for trying the script; not a baseline)."""
import argparse
import configparser
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# the reference model: tests/reference/ in the source tree, beside this script in a GPU bundle
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "tests", "reference")]
sys.stdout.reconfigure(line_buffering=True)


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def read_ini(path, sets):
    ini = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), comment_prefixes=(";", "#"))
    ini.read(path)
    for s in sets:
        key, value = s.split("=", 1)
        section, name = key.split(".", 1)
        if not ini.has_section(section):
            ini.add_section(section)
        ini.set(section, name, value)
    train = ini["train"] if ini.has_section("train") else {}
    return {"lr": float(train.get("lr", 1e-3)), "alpha": float(train.get("rmsprop_alpha", 0.99)),
            "clip": float(train.get("grad_clip", 1.0))}


def rotor_config(rotor, ini, sets):
    """The model's config.json, and the effective micro_batch and seq_len `rotor info` reports."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.json")
        cmd = [rotor, "info", ini, "--config-json", path] + [a for s in sets for a in ("--set", s)]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        with open(path) as f:
            cfg = json.load(f)
    shape = re.search(r"micro_batch (\d+) x seq_len (\d+)", out)
    if not shape:
        raise RuntimeError(f"`rotor info {ini}` printed no micro_batch x seq_len line")
    return cfg, int(shape.group(1)), int(shape.group(2))


def batch(torch, cfg, B, T, dev):
    V = cfg["vocab_size"]
    ids = torch.randint(0, V, (B, T), device=dev)
    if cfg.get("rotor_head", "lm") == "classifier":
        labels = torch.full((B, T), -100, device=dev)
        labels[:, -1] = torch.randint(0, cfg["num_labels"], (B,), device=dev)
    else:
        labels = torch.randint(0, V, (B, T), device=dev)
    return ids, labels


def time_steps(torch, step, warmup, steps, dev):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        if dev == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def make_step(torch, model, forward, loss_fn, sh):
    opt = torch.optim.RMSprop(model.parameters(), lr=sh["lr"], alpha=sh["alpha"])

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward())
        loss.backward()
        if sh["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), sh["clip"])
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rotor", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("configs", nargs="+")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        skip(f"no torch ({e})")
    if not a.cpu and not torch.cuda.is_available():
        skip("no GPU (torch.cuda.is_available() is False)")
    import ref_model as rm
    dev = "cpu" if a.cpu else "cuda"
    print(f"torch_rnn_step device={torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'} torch={torch.__version__}")
    for ini in a.configs:
        name = os.path.splitext(os.path.basename(ini))[0]
        sh = read_ini(ini, a.set)
        cfg, B, T = rotor_config(a.rotor, ini, a.set)
        ids, labels = batch(torch, cfg, B, T, dev)
        model = rm.RotorLM(cfg).to(dev)
        params = sum(p.numel() for p in model.parameters())
        classify = cfg.get("rotor_head", "lm") == "classifier"

        def loss_fn(logits):
            if classify:
                return F.cross_entropy(logits, labels[:, -1])
            return rm.lm_loss(logits, labels)
        variants = [("loop", model, lambda: model(ids, naive=True, labels=labels))]
        if cfg["model_type"].removeprefix("rotor_") == "lstm" and cfg.get("rotor_block") == "rnn" and cfg["num_hidden_layers"] == 1:
            # cuDNN's LSTM in place of the loop: same embedding and readout
            lstm = torch.nn.LSTM(cfg["hidden_size"], cfg["hidden_size"], batch_first=True).to(dev)
            fused = torch.nn.ModuleDict({"m": model, "lstm": lstm})

            def cudnn():
                bb = model.model
                x = bb.encoder((ids[..., None].float() - cfg.get("rotor_input_offset", 0)) / cfg["rotor_input_scale"]) if hasattr(bb, "encoder") \
                    else bb.embeddings(ids)
                h, _ = lstm(x)
                if classify:
                    return model.classifier(h[:, -1] if cfg.get("rotor_pool") == "last" else h.mean(1))
                return model.lm_head(h)
            variants.append(("cudnn", fused, cudnn))
        for variant, module, forward in variants:
            try:
                ms = time_steps(torch, make_step(torch, module, forward, loss_fn, sh), a.warmup, a.steps, dev)
                print(f"torch_rnn_step config={name} variant={variant} shape={B}x{T} ms={ms:.2f} "
                      f"tok_s={B * T / (ms / 1e3):.0f} params={params}")
            except Exception as e:  # noqa: BLE001 (report and go on with the next)
                print(f"FAIL {name} {variant}: {e}")
        del model
        if dev == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
