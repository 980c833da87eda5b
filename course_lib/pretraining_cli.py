"""How the tiny BERT's pretraining is launched (lessons 16 and 17): the command line, and the
processes that torchrun starts.

    python -m course_lib.pretraining_cli                               # one process, ~85 s
    torchrun --nproc_per_node=2 -m course_lib.pretraining_cli ...      # two processes, same result

Every field of `course_lib.pretraining.PretrainConfig` is an option (`--steps 3000`, `--task sop`),
plus `--seed`, `--no-cache` and `--history-out FILE.csv`. Under torchrun (WORLD_SIZE > 1)
`course_lib.pretraining.rank_and_world()` joins the gloo process group and `training_device()`
keeps every rank on the CPU (both importable from here too); the training loop asks them both, so
it serves one process and many. What the processes compute (every rank draws the same global
batch and keeps its own rows) is explained in `course_lib.pretraining`.

This module imports `course_lib.pretraining`, never the other way round: the library does not
depend on its command line, and the launcher is no part of the pretraining cache key
(`source_modules`): it decides no weight (the config it builds is part of the key).
"""
from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from .pretraining import (PretrainConfig, load_or_pretrain, pretrain, rank_and_world,
                          training_device)  # noqa: F401  training_device: importable from here as before


def _parse_args(argv=None):
    if isinstance(argv, (str, bytes)):
        # argparse would read "--help" as the arguments "-", "-", "h", ...
        raise ValueError(f"argv: expected a list of str (e.g. ['--steps', '10']), got one str {argv!r:.40} "
                         f"(split it: {str(argv).split()!r:.40})")

    p = argparse.ArgumentParser(description="Pretrain a tiny BERT (MLM + NSP/SOP) on the "
                                            "synthetic corpus; works under torchrun.")
    for f in fields(PretrainConfig):
        if f.name == "mask_prob_split":
            p.add_argument("--mask-prob-split", type=float, nargs=3, default=None)
        else:
            p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cache", action="store_true", help="train even if a checkpoint exists "
                                                           "and do not write one")
    p.add_argument("--history-out", type=Path, default=None,
                   help="write the history as CSV here (rank 0 only)")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = _parse_args(argv)
    overrides = {f.name: getattr(args, f.name) for f in fields(PretrainConfig)
                 if getattr(args, f.name) is not None}
    config = PretrainConfig(**overrides)
    if args.no_cache:
        result = pretrain(config, args.seed)
    else:
        result = load_or_pretrain(config, args.seed)
    rank, world = rank_and_world()
    if rank == 0:
        last = result.history.iloc[-1]
        print(f"world_size={world} steps={config.steps} loss={last['loss']:.4f} "
              f"mlm_acc={last['mlm_acc']:.3f} nsp_acc={last['nsp_acc']:.3f}")
        if args.history_out is not None:
            result.history.to_csv(args.history_out, index=False)
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()


if __name__ == "__main__":
    main()
