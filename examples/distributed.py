"""Multi-chip execution on a simulated A2 server: a GPT block written for one chip, made
Megatron tensor-parallel by the compiler (parallel_strategy="model_parallel"), the
guide's own example (model_parallel on a 2 x 2 mesh, tensor_parallel_size=4, four
requests of [batch, seq_len, hidden] through dist_executor.run([...])), the same
block data- and tensor-parallel on the 2 x 2 mesh ("hybrid"), a 4-stage
pipeline of blocks over micro-batches written by hand (GPipe forward, send / recv), and
the same blocks trained through parallel_strategy="pipeline_parallel" with the 1F1B
schedule (forward and backward per micro-batch, gradients accumulated). Each result is
checked against a single-chip reference (numpy float32; the gradients against the
single-chip p.value_and_grad); the script prints simulated time, communication share,
the pipelines' bubbles, and the memory per stage (1F1B's activations against GPipe's).

    python examples/distributed.py [--seq N] [--hidden N] [--heads N] [--microbatches M]
"""

import argparse
import math

import numpy as np

import pypto as p

D = p.distributed


def make_block(rng, d, ffn):
    def w(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    return {
        "ln1": (np.ones(d, np.float16), np.zeros(d, np.float16)),
        "ln2": (np.ones(d, np.float16), np.zeros(d, np.float16)),
        "wq": w(d, d, scale=d ** -0.5), "wk": w(d, d, scale=d ** -0.5), "wv": w(d, d, scale=d ** -0.5),
        "wo": w(d, d, scale=d ** -0.5 / 2), "w1": w(d, ffn, scale=d ** -0.5), "w2": w(ffn, d, scale=ffn ** -0.5 / 2),
    }  # fmt: skip


def reference_block(x, b, heads):
    """float32 numpy: pre-norm causal attention and a GELU MLP, with residuals."""
    f = np.float32
    seq, d = x.shape
    hd = d // heads

    def ln(v, wb):
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(var + 1e-5) * wb[0].astype(f) + wb[1].astype(f)

    x = x.astype(f)
    a = ln(x, b["ln1"])
    q, k, v = ((a @ b[n].astype(f)).reshape(seq, heads, hd).transpose(1, 0, 2) for n in ("wq", "wk", "wv"))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -1e4)
    e = np.exp(s - s.max(-1, keepdims=True))
    att = (e / e.sum(-1, keepdims=True)) @ v
    x = x + att.transpose(1, 0, 2).reshape(seq, d) @ b["wo"].astype(f)
    m = ln(x, b["ln2"]) @ b["w1"].astype(f)
    g = 0.5 * m * (1 + np.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m ** 3)))
    return x + g @ b["w2"].astype(f)


def block(x, ln1w, ln1b, ln2w, ln2b, wq, wk, wv, wo, w1, w2, *, heads):
    """The whole block on one chip, as one writes it for one chip: the tensor-parallel
    pass (parallel_strategy="model_parallel") shards it over the ranks."""
    seq, d = x.shape
    hd = d // heads
    a = p.layer_norm(x, weight=ln1w, bias=ln1b)
    q, k, v = (p.transpose(p.reshape(p.matmul(a, w), seq, heads, hd), 1, 0, 2) for w in (wq, wk, wv))
    s = p.matmul(q, k, transpose_b=True) * (1 / math.sqrt(hd))
    mask = p.from_numpy(np.tril(np.ones((seq, seq), bool)))
    att = p.matmul(p.softmax(p.where(mask, s, -1e4), axis=-1), v)
    x = x + p.matmul(p.reshape(p.transpose(att, 1, 0, 2), seq, d), wo)
    m = p.gelu(p.matmul(p.layer_norm(x, weight=ln2w, bias=ln2b), w1))
    return x + p.matmul(m, w2)


def block_args(b):
    return (*b["ln1"], *b["ln2"], b["wq"], b["wk"], b["wv"], b["wo"], b["w1"], b["w2"])


def gpt_model(b, heads):
    def model(x):  # the weights are captured: the pass finds and splits them
        return block(x, *block_args(b), heads=heads)

    return model


def tensor_parallel(x, b, heads, tp):
    """The block compiled for tp chips: the pass splits q, k, v and the first MLP layer
    by columns (each rank its heads), the output projection and the second MLP layer by
    rows, with one all-reduce after each of those two."""
    cfg = p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=tp)
    ex = p.compile(gpt_model(b, heads), config=cfg)
    y = ex.run(x)
    return y.numpy(), ex.last_report, ex.report


def guide_example(xs, b, heads):
    """The guide's distributed example as it is written: four chips on a 2 x 2 mesh
    shard one model (tensor_parallel_size=4), and the list of requests, each of shape
    [batch, seq_len, hidden], runs through it one after another."""
    batch = xs[0].shape[0]

    def model(x):  # the block per sequence of the request
        return p.stack([block(x[i], *block_args(b), heads=heads) for i in range(batch)])

    dist_config = p.DistributedConfig(parallel_strategy="model_parallel", device_mesh=[2, 2],
                                      tensor_parallel_size=4, pipeline_parallel_size=1)
    dist_executor = p.compile(model, config=dist_config)
    outputs = dist_executor.run([p.from_numpy(x) for x in xs])
    return [o.numpy() for o in outputs], dist_executor.last_report, dist_executor.report


def hybrid(xs, b, heads):
    """The guide's 2 x 2 mesh: sequences split over "dp", the block's heads over "tp"."""
    cfg = p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[2, 2], mesh_axis_names=("dp", "tp"))
    ex = p.compile(gpt_model(b, heads), config=cfg)
    outs = ex.run([x for x in xs])  # one sequence per data-parallel group
    return np.stack([o.numpy() for o in outs]), ex.last_report


def pipeline(micro, blocks, heads):
    """A GPipe forward over len(blocks) ranks, one block each: rank s takes micro-batch
    j from rank s-1, runs its block and passes it on. Returns the outputs and the
    report; the bubble is the share of the run a stage stands idle."""
    stages = len(blocks)
    mesh = D.Mesh((stages,), ("pp",))
    seq, d = micro.shape[1:]

    def stage(xs, *flat):
        s = D.rank()
        params = flat[10 * s:10 * s + 10]  # this stage's block
        outs = []
        for j in range(micro.shape[0]):
            x = p.reshape(xs[j], seq, d) if s == 0 else D.recv(s - 1, (seq, d), "float16")
            y = block(x, *params, heads=heads).realize()  # computed now, in this micro-batch's slot
            if s + 1 < stages:
                D.send(y, s + 1)
            outs.append(y)
        if s < stages - 1:  # only the last stage's outputs are the pipeline's
            outs = [p.zeros((seq, d), "float16")] * len(outs)
        return p.stack(outs)

    flat = [w for blk in blocks for w in block_args(blk)]
    f = p.shard_map(stage, mesh, in_specs=(None, *[None] * len(flat)), out_specs=D.P("pp"))
    y = f(micro, *flat).numpy()
    return y[(stages - 1) * micro.shape[0]:], D.last_report()


def train_pipeline(micro, targets, blocks, heads, schedule):
    """The blocks trained as a 4-stage pipeline by p.compile: one block a layer, one
    sequence a micro-batch, the mean squared error to targets as the loss."""
    layers = [(lambda x, *w: block(x, *w, heads=heads), list(block_args(blk))) for blk in blocks]
    cfg = p.DistributedConfig(parallel_strategy="pipeline_parallel", device_mesh=[len(blocks)],
                              pipeline_parallel_size=len(blocks), num_microbatches=micro.shape[0], schedule=schedule)
    ex = p.compile(layers, config=cfg)
    loss, grads = ex.value_and_grad(mse, micro.reshape(-1, micro.shape[-1]), targets.reshape(-1, targets.shape[-1]))
    return loss, grads, ex.last_report


def mse(y, t):
    return p.mean((p.cast(y, "float32") - p.cast(t, "float32")) ** 2.0)


def one_chip_value_and_grad(micro, targets, blocks, heads):
    """The mean over the micro-batches of their losses and its gradients, on one chip."""
    def loss_fn(params, xs, ts):
        total = 0.0
        for j in range(micro.shape[0]):
            y = xs[j]
            for k in range(len(blocks)):
                y = block(y, *params[10 * k:10 * k + 10], heads=heads)
            total = total + mse(y, ts[j]) * (1.0 / micro.shape[0])
        return total

    params = [p.from_numpy(w) for blk in blocks for w in block_args(blk)]
    return p.value_and_grad(loss_fn)(params, p.from_numpy(micro), p.from_numpy(targets))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--microbatches", type=int, default=8)
    args = ap.parse_args(argv)
    p.set_device("a2")
    rng = np.random.default_rng(0)
    seq, d, heads = args.seq, args.hidden, args.heads
    b = make_block(rng, d, 4 * d)
    x = rng.standard_normal((seq, d)).astype(np.float16)
    ref = reference_block(x, b, heads)
    results = {}

    print(f"GPT block: seq {seq}, hidden {d}, {heads} heads, fp16, on an A2 server ({D.Mesh((8,)).info['tiers'][0]['source']})")
    for tp in (1, 2, 4):
        y, r, plan = tensor_parallel(x, b, heads, tp)
        err = float(np.abs(y.astype(np.float32) - ref).max())
        results[f"tp{tp}"] = {"seconds": r.seconds, "comm_share": r.comm_share, "max_err": err, "pairs": len(plan.pairs)}
        print(f"  tensor parallel x{tp}: {r.seconds * 1e6:8.1f} us simulated, communication {r.comm_share:5.1%}, "
              f"max |err| vs float32 {err:.3g}")
        if tp == 4:
            print(f"    the pass: {plan.summary()}")

    requests = [rng.standard_normal((2, seq, d)).astype(np.float16) for _ in range(4)]
    outs, r, plan = guide_example(requests, b, heads)
    err = max(float(np.abs(o[i].astype(np.float32) - reference_block(x[i], b, heads)).max())
              for x, o in zip(requests, outs) for i in range(x.shape[0]))
    results["guide"] = {"seconds": r.seconds, "comm_share": r.comm_share, "max_err": err, "outputs": len(outs),
                        "tp": plan.tp}
    print(f"  the guide's example (model_parallel, device_mesh [2, 2], TP 4): {len(outs)} requests of "
          f"{list(requests[0].shape)}, {r.seconds * 1e6:8.1f} us simulated, communication {r.comm_share:5.1%}, "
          f"max |err| {err:.3g}")

    xs = rng.standard_normal((2, seq, d)).astype(np.float16)
    y, r = hybrid(xs, b, heads)
    err = max(float(np.abs(y[i].astype(np.float32) - reference_block(xs[i], b, heads)).max()) for i in range(2))
    results["hybrid"] = {"seconds": r.seconds, "comm_share": r.comm_share, "max_err": err}
    print(f"  2 x 2 mesh (dp x tp): {r.seconds * 1e6:8.1f} us simulated for 2 sequences, communication "
          f"{r.comm_share:5.1%}, max |err| {err:.3g}")

    stages, m = 4, args.microbatches
    blocks = [make_block(rng, d, 4 * d) for _ in range(stages)]
    micro = rng.standard_normal((m, seq, d)).astype(np.float16)
    y, r = pipeline(micro, blocks, heads)
    want = micro.astype(np.float32)
    for blk in blocks:
        want = np.stack([reference_block(want[j].astype(np.float16), blk, heads) for j in range(m)])
    err = float(np.abs(y.astype(np.float32) - want).max())
    busy = min(rk.compute_s for rk in r.ranks)
    bubble = 1 - busy / r.seconds
    theory = (stages - 1) / (m + stages - 1)
    results["pipeline"] = {"seconds": r.seconds, "bubble": bubble, "theory": theory, "max_err": err}
    print(f"  pipeline, {stages} stages x {m} micro-batches (GPipe forward): {r.seconds * 1e6:8.1f} us simulated, "
          f"bubble {bubble:5.1%} (forward-only GPipe: (p-1)/(m+p-1) = {theory:5.1%}), max |err| {err:.3g}")

    targets = rng.standard_normal(micro.shape).astype(np.float16)
    want_loss, want_g = one_chip_value_and_grad(micro, targets, blocks, heads)
    want_g = [g.numpy().astype(np.float32) for g in want_g]
    peaks, mems = {}, {}
    for schedule in ("1f1b", "gpipe"):
        loss, grads, r = train_pipeline(micro, targets, blocks, heads, schedule)
        flat = [g.numpy().astype(np.float32) for gs in grads for g in gs]
        gerr = max(float(np.abs(a - b).max() / (np.abs(b).max() + 1e-6)) for a, b in zip(flat, want_g))
        lerr = abs(float(loss.numpy()) - float(want_loss.numpy()))
        peaks[schedule] = r.peak_activation_bytes
        mems[schedule] = r.memory_bytes
        results[f"train_{schedule}"] = {"seconds": r.seconds, "bubble": r.bubble, "theory": (stages - 1) / m,
                                        "comm_share": r.comm_share, "idle_share": r.idle_share, "loss_err": lerr,
                                        "grad_rel_err": gerr, "peak_activation_bytes": r.peak_activation_bytes,
                                        "memory_bytes": r.memory_bytes}
        print(f"  training, {stages} stages x {m} micro-batches ({schedule}, pipeline_parallel): {r.seconds * 1e6:8.1f} us "
              f"simulated, communication {r.comm_share:5.1%}, bubble {r.bubble:5.1%} ((p-1)/m = {(stages - 1) / m:5.1%}; "
              f"idle share with the transfers {r.idle_share:5.1%}), loss |err| {lerr:.3g}, gradients max rel err {gerr:.3g}")
    print("    peak activation KiB per stage: " + ", ".join(
        f"{s} {[round(b / 1024) for b in peaks[s]]}" for s in ("1f1b", "gpipe")))
    print("    memory KiB per stage (weights + gradient sums + peak activations): " + ", ".join(
        f"{s} {[round(b / 1024) for b in mems[s]]}" for s in ("1f1b", "gpipe")))
    return results


if __name__ == "__main__":
    main()
