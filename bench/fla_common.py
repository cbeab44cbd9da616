"""What bench/fla_mixers.py and bench/fla_step.py share: fla's own Triton kernels only (not
the TileLang / FlashQLA backends it may dispatch to), and the skip (exit 77) without torch or
a GPU."""
import os
import sys

FLA_VERSION = "0.6.0"
ROWS, SEQ_LEN = 4, 4096  # micro_batch x seq_len of configs/*-370m-selective-pg.ini

os.environ["FLA_DISABLE_BACKEND_DISPATCH"] = "1"


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def require_torch_gpu():
    """torch, or a skip without it or without a GPU."""
    try:
        import torch
    except ImportError as e:
        skip(f"no torch ({e})")
    if not torch.cuda.is_available():
        skip("no GPU (torch.cuda.is_available() is False)")
    return torch
