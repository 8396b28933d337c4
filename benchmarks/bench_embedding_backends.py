"""Embedding throughput of the default model under three CPU backends, and how far they move.

Backends: PyTorch float32 (what ``EmbeddingRule`` uses), PyTorch with dynamic int8 quantisation of
the linear layers (``torch.ao.quantization.quantize_dynamic``), and ONNX Runtime (the transformer
exported with ``torch.onnx.export``; needs the ``onnxruntime`` and ``onnx`` packages, skipped when
absent). Texts: every committed hypothesis and perturbation variant. For each backend it prints
texts per second and the largest absolute change of a pairwise cosine similarity against float32
over all pairs of those texts; the book adopts a backend only if that change stays below 0.01.

    .venv/bin/python benchmarks/bench_embedding_backends.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mechaudit.perturb import load_suite
from mechaudit.rules.embedding import load_model
from mechaudit.schema import hypothesis_text, load_hypotheses


def texts() -> list[str]:
    out = [hypothesis_text(h) for h in load_hypotheses()]
    out += [hypothesis_text(r["variant"]) for r in load_suite()]
    return list(dict.fromkeys(out))


class ByName(torch.nn.Module):
    """The transformer called with keyword arguments, so export does not depend on their order."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the unmasked tokens, then l2-normalised (the model's own pooling and norm)."""
    summed = (hidden * mask[..., None]).sum(axis=1)
    vecs = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def encode_with(forward, tokenizer, items: list[str], batch: int = 64) -> np.ndarray:
    out = []
    for start in range(0, len(items), batch):
        enc = tokenizer(items[start:start + batch], padding=True, truncation=True, max_length=256,
                        return_tensors="pt")
        hidden = forward(enc)
        out.append(mean_pool(hidden, enc["attention_mask"].numpy().astype(np.float32)))
    return np.concatenate(out)


def timed(fn, *args) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - t0


def main() -> None:
    torch.manual_seed(0)
    items = texts()
    st_model = load_model(None)
    transformer = st_model[0].auto_model.eval()
    tokenizer = st_model[0].tokenizer
    base, t_base = timed(lambda: st_model.encode(items, batch_size=64, normalize_embeddings=True,
                                                 convert_to_numpy=True))
    cos_base = base @ base.T
    rows = [("PyTorch float32 (in use)", len(items) / t_base, 0.0)]

    def torch_forward(model):
        def forward(enc):
            with torch.inference_mode():
                return model(**enc).last_hidden_state.numpy()
        return forward

    int8 = torch.ao.quantization.quantize_dynamic(transformer, {torch.nn.Linear}, dtype=torch.qint8)
    emb, t = timed(encode_with, torch_forward(int8), tokenizer, items)
    rows.append(("PyTorch dynamic int8", len(items) / t, float(np.abs(emb @ emb.T - cos_base).max())))

    try:
        import onnxruntime as ort
    except ImportError:
        rows.append(("ONNX Runtime", float("nan"), float("nan")))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.onnx"
            sample = tokenizer(items[:2], padding=True, return_tensors="pt")
            names = ["input_ids", "attention_mask", "token_type_ids"]
            axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"hidden": {0: "batch", 1: "tokens"}}
            torch.onnx.export(ByName(transformer), tuple(sample[n] for n in names), str(path), input_names=names,
                              output_names=["hidden"], dynamic_axes=axes, opset_version=17, dynamo=False)
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

            def onnx_forward(enc):
                return session.run(["hidden"], {n: enc[n].numpy() for n in names})[0]

            emb, t = timed(encode_with, onnx_forward, tokenizer, items)
        rows.append(("ONNX Runtime float32", len(items) / t, float(np.abs(emb @ emb.T - cos_base).max())))

    print(f"{len(items)} distinct texts; threads: {torch.get_num_threads()}")
    print("| backend | texts/s | ratio to float32 | max |cosine change| | within 0.01 |")
    print("|---|---:|---:|---:|---|")
    for name, rate, change in rows:
        print(f"| {name} | {rate:.1f} | {rate / rows[0][1]:.2f}x | {change:.4f} | {change < 0.01} |")


if __name__ == "__main__":
    main()
