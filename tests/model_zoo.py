"""Models other people wrote, at small random-weight configurations (built from each
library's config classes: nothing is downloaded), for the model tests and
bench/models.py. Each entry builds an eval-mode model and its example inputs; the
libraries are the ``pypto[models]`` extra (transformers, torchvision, timm)."""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch

#: LM sizes: small enough for minutes of CI, large enough to have every mechanism
#: (several layers, heads, grouped-query attention, rotary embeddings, MoE routing).
VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 512, 64, 2, 4, 2, 128
BATCH, SEQ, IMAGE = 2, 16, 32


@dataclasses.dataclass
class Case:
    name: str
    library: str  # the package that defines the model
    kind: str  # "lm" (logits over a vocabulary), "encoder" (hidden states), "image" (class scores)
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple]
    sweep_sizes: list = None  # its sweep's (batch, size) pairs when not SWEEP[kind]

    def model(self) -> torch.nn.Module:
        torch.manual_seed(0)
        return self.build().eval()

    def example(self, batch=None, size=None) -> tuple:
        """The inputs, at the set's sizes or the batch and size (sequence length or
        image side) given."""
        g = torch.Generator().manual_seed(1 if batch is None else 1000 * batch + size)
        return self.inputs(g) if batch is None else self.inputs(g, batch, size)

    def sweep(self) -> list:
        """(batch, size, inputs) for each size of the sweep."""
        return [(b, s, self.example(b, s)) for b, s in self.sweep_sizes or SWEEP[self.kind]]


def _ids(g, batch=BATCH, size=SEQ):
    return (torch.randint(0, VOCAB, (batch, size), generator=g),)


def _image(g, batch=BATCH, size=IMAGE):
    return (torch.randn(batch, 3, size, size, generator=g),)


#: The sizes a sweep runs (bench/models.py --sweep and the dynamic-size tests): (batch,
#: sequence length) of token ids, (batch, image side) of images. None is 0 or 1 (dynamo
#: specialises those: a capture of their own), and the image sides keep ResNet's last
#: feature map 1x1 (sides 17 to 32), which the first capture assumes.
SWEEP = {"lm": [(2, 16), (3, 24), (2, 40), (4, 9)], "image": [(2, 32), (3, 24), (4, 28)]}
SWEEP["encoder"] = SWEEP["lm"]


class _Logits(torch.nn.Module):
    """A transformers model called the way a user calls it, returning the tensor (logits
    or the last hidden state) rather than the library's output object."""

    def __init__(self, model, field):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, input_ids):
        return getattr(self.model(input_ids=input_ids, use_cache=False, return_dict=True), self.field)


class _Encoder(_Logits):
    def forward(self, input_ids):
        return getattr(self.model(input_ids=input_ids, return_dict=True), self.field)


def _hf(config_name, model_name, field="logits", encoder=False, **cfg):
    def build():
        import transformers

        config = getattr(transformers, config_name)(**cfg)
        model = getattr(transformers, model_name)(config)
        return (_Encoder if encoder else _Logits)(model, field)

    return build


_DECODER = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN)
_GQA = dict(_DECODER, num_key_value_heads=KV_HEADS, max_position_embeddings=128)


def _tv(name, **kw):
    def build():
        import torchvision

        return getattr(torchvision.models, name)(weights=None, **kw)

    return build


def _timm(name, **kw):
    def build():
        import timm

        return timm.create_model(name, pretrained=False, **kw)

    return build


def _vit():
    from torchvision.models import VisionTransformer

    m = VisionTransformer(image_size=IMAGE, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10)
    torch.nn.init.normal_(m.heads.head.weight, std=0.05)  # torchvision starts the head at zero: every score would be 0
    return m


CASES = [
    Case("gpt2", "transformers", "lm", _hf("GPT2Config", "GPT2LMHeadModel", vocab_size=VOCAB, bos_token_id=0, eos_token_id=0, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=128), _ids),
    Case("llama", "transformers", "lm", _hf("LlamaConfig", "LlamaForCausalLM", **_GQA), _ids),
    Case("mistral", "transformers", "lm", _hf("MistralConfig", "MistralForCausalLM", **_GQA, sliding_window=8), _ids),
    Case("qwen2", "transformers", "lm", _hf("Qwen2Config", "Qwen2ForCausalLM", **_GQA), _ids),
    Case("mixtral", "transformers", "lm", _hf("MixtralConfig", "MixtralForCausalLM", **_GQA, num_local_experts=4, num_experts_per_tok=2), _ids),
    Case("bert", "transformers", "encoder", _hf("BertConfig", "BertModel", "last_hidden_state", True, vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=128), _ids),
    Case("t5-encoder", "transformers", "encoder", _hf("T5Config", "T5EncoderModel", "last_hidden_state", True, vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS), _ids),
    Case("opt", "transformers", "lm", _hf("OPTConfig", "OPTForCausalLM", vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, ffn_dim=FFN, word_embed_proj_dim=HIDDEN, max_position_embeddings=128), _ids),
    Case("gpt-neox", "transformers", "lm", _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", **_DECODER, max_position_embeddings=128), _ids),
    Case("resnet18", "torchvision", "image", _tv("resnet18", num_classes=10), _image),
    Case("mobilenet-v2", "torchvision", "image", _tv("mobilenet_v2", num_classes=10), _image),
    Case("vit", "torchvision", "image", _vit, _image, [(2, IMAGE), (3, IMAGE), (4, IMAGE)]),  # its image size is fixed
    Case("efficientnet-b0", "torchvision", "image", _tv("efficientnet_b0", num_classes=10), _image),
    Case("convnext-atto", "timm", "image", _timm("convnext_atto", num_classes=10), _image,
         [(2, IMAGE), (3, IMAGE), (4, IMAGE)]),  # its last stage needs sides of 32 at least (a multiple of 32)
]

BY_NAME = {c.name: c for c in CASES}


def param_bytes(model: torch.nn.Module) -> int:
    """Bytes of the model's parameters and buffers (each tensor once)."""
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


def compare(got, want, kind):
    """(rel_err, argmax_agree) of got against torch's want: the largest difference over
    want's largest magnitude, and the share of positions whose argmax over the last axis
    agrees (None for encoders' hidden states)."""
    got, want = got.detach().float(), want.detach().float()
    rel = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
    agree = None
    if kind in ("lm", "image"):
        agree = float((got.argmax(-1) == want.argmax(-1)).float().mean())
    return rel, agree
