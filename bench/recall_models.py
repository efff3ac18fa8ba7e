"""The models of the recall bench: names (plain data, importable without torch) and builders.

A model name is `package:name`. `build(name)` (worker side: imports torch and the package) returns a
`Built`: the module with random weights, the candidate sizes (sequence lengths or spatial sizes) and a
function making inputs for (batch, size). Nothing is downloaded: configs are made in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

PACKAGES = ("timm", "transformers", "monai", "diffusers", "torch_geometric", "vit_pytorch", "x_transformers",
            "vector_quantize_pytorch", "perceiver_pytorch", "performer_pytorch", "local_attention", "esm",
            "mixture_of_experts", "soft_moe_pytorch", "MEGABYTE_pytorch", "ring_attention_pytorch", "kornia", "mambapy",
            "axial_attention", "reformer_pytorch", "linear_attention_transformer", "egnn_pytorch", "product_key_memory",
            "colt5_attention", "conformer", "minGRU_pytorch", "nystrom_attention", "pytorch_tabnet", "e3nn",
            "stable_baselines3")

TIMM = """
resnet10t resnet18 efficientnet_b0 efficientnet_lite0 mobilenetv2_050 mobilenetv3_small_050 mobilenetv4_conv_small ghostnet_100 ghostnetv2_100 regnetx_002 regnety_002 rexnet_100
mnasnet_050 lcnet_050 repvgg_a0 mobileone_s0 fastvit_t8 convnext_atto convnextv2_atto edgenext_xx_small efficientformerv2_s0 levit_128s mobilevit_xxs mobilevitv2_050
vit_tiny_patch16_224 deit_tiny_patch16_224 pit_ti_224 swin_tiny_patch4_window7_224 convit_tiny poolformer_s12 poolformerv2_s12 mixer_s16_224 resmlp_12_224 gmlp_ti16_224 sequencer2d_s visformer_tiny
pvt_v2_b0 darknet17 sedarknet21 hgnet_tiny hgnetv2_b0 repghostnet_050 efficientvit_b0 efficientvit_m0 tiny_vit_5m_224 starnet_s1 ese_vovnet19b_slim resnest14d
skresnet18 gernet_s nf_resnet26 halonet26t botnet26t_256 lambda_resnet26t eva02_tiny_patch14_224 vit_relpos_small_patch16_224 vit_little_patch16_reg4_gap_256 test_vit test_vit3 test_vit_relpos
test_efficientnet test_efficientnet_gn test_byobnet test_coatnet test_convnext test_mambaout test_maxvit test_nfnet test_resnet mambaout_femto fasternet_t0 shvit_s1
swiftformer_xs repvit_m0_9
coat_tiny crossvit_tiny_240 cait_xxs24_224 xcit_nano_12_p16_224 twins_pcpvt_small nest_tiny tnt_s_patch16_224 gcvit_xxtiny
davit_tiny focalnet_tiny_srf inception_next_tiny efficientformer_l1 mvitv2_tiny regnetz_b16 rdnet_tiny vitamin_small_224
hiera_tiny_224 dla34 cspresnet50 deit3_small_patch16_224 flexivit_small vit_small_patch16_rope_224 fastvit_mci0
mobilenetv5_300m ghostnetv3_050 gmixer_12_224 levit_conv_128s test_convnext2 test_convnext3 test_efficientnet_evos
test_efficientnet_ln test_vit2 test_vit4
""".split()

# transformers model types taking `input_ids` (decoder-only and encoder-only) with a tiny config
TRANSFORMERS_TEXT = """
bert roberta distilbert albert electra deberta deberta-v2 xlm-roberta camembert mpnet convbert ernie
roformer squeezebert mobilebert layoutlm xlnet longformer big_bird data2vec-text esm modernbert gpt2 gpt_neo
gpt_neox gptj gpt_bigcode opt bloom llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe
phi phi3 gemma gemma2 gemma3_text falcon stablelm starcoder2 olmo olmo2 olmoe cohere
granite codegen xglm mpt biogpt glm glm4 helium nemotron ministral deepseek_v3 mamba
mamba2 rwkv recurrent_gemma falcon_mamba openai-gpt fnet bitnet ernie4_5 hunyuan_v1_dense lfm2
arcee apertus bamba cohere2 ctrl dbrx deepseek_v2 diffllama doge dots1 ernie4_5_moe exaone4 falcon_h1 gpt_oss
granitemoe granitemoehybrid hunyuan_v1_moe jamba jetmoe lfm2_moe minimax nemotron_h olmo3 persimmon phimoe
qwen3_next reformer seed_oss smollm3 vaultgemma zamba2 xlstm megatron-bert roc_bert rembert xlm
""".split()

# encoder-decoder types: called with input_ids and decoder_input_ids
TRANSFORMERS_SEQ2SEQ = """
t5 mt5 bart mbart pegasus marian blenderbot led m2m_100 switch_transformers
prophetnet mvp plbart bigbird_pegasus longt5 umt5 fsmt blenderbot-small nllb-moe
""".split()

# the "audio" set (2026-12-05, measured before any change for it): speech encoders on raw waveforms (masked in train
# mode by SpecAugment-style time masks) and Whisper on a tiny log-mel input
TRANSFORMERS_AUDIO = """
wav2vec2 hubert wavlm data2vec-audio sew sew-d unispeech unispeech-sat wav2vec2-conformer whisper
""".split()

# vision types taking pixel_values at a tiny image size
TRANSFORMERS_VISION = """
vit deit beit dinov2 swin swinv2 convnext convnextv2 resnet segformer mobilevit mobilenet_v2 poolformer efficientnet bit pvt_v2
levit mobilevitv2 regnet cvt focalnet hiera yolos data2vec-vision swiftformer glpn textnet vit_msn ijepa
dinov2_with_registers pvt mobilenet_v1 dinat van
""".split()

MONAI = """
UNet BasicUNet BasicUNetPlusPlus AttentionUnet SegResNet SegResNetVAE SegResNetDS DynUNet UNETR SwinUNETR
DenseNet121 ResNet VNet HighResNet AutoEncoder VarAutoEncoder Regressor Classifier Generator Discriminator
EfficientNetBN ViT ViTAutoEnc LocalNet GlobalNet RegUNet MedNeXt Quicknat VoxelMorph FullyConnectedNet
VarFullyConnectedNet AutoencoderKL DiffusionModelUNet PatchDiscriminator VQVAE DAF3D SEResNet50 AHNet HoVerNet
DecoderOnlyTransformer MaskedAutoEncoderViT SegResNetDS2 Critic MultiScalePatchDiscriminator
""".split()

# diffusers (no weights downloaded: each config is made in code, tiny)
DIFFUSERS = """
UNet2DModel UNet2DConditionModel AutoencoderKL VQModel DiTTransformer2DModel SD3Transformer2DModel
FluxTransformer2DModel PixArtTransformer2DModel WanTransformer3DModel LTXVideoTransformer3DModel
HunyuanVideoTransformer3DModel CogVideoXTransformer3DModel
""".split()


# PyTorch Geometric: graph layers and models called on random graphs (x, edge_index[, ...]); the batch
# size is the number of graphs, the size the number of nodes per graph
PYG = """
GCN GraphSAGE GIN GAT PNA EdgeCNN GraphUNet AttentiveFP NeuralFingerprint PMLP RECT_L Polynormer
GCNConv GATConv GATv2Conv TransformerConv SAGEConv GraphConv ChebConv GatedGraphConv ResGatedGraphConv
ARMAConv SGConv APPNP TAGConv GENConv FeaStConv SuperGATConv FiLMConv GeneralConv ClusterGCNConv LEConv
MFConv EGConv GCN2Conv NNConv CGConv GINEConv GMMConv PointNetConv PointTransformerConv HypergraphConv
LGConv SSGConv AntiSymmetricConv DirGNNConv GPSConv WLConvContinuous
TopKPooling SAGPooling EdgePooling ASAPooling
""".split()


# vit-pytorch (lucidrains): vision transformers, each file one architecture; `module.Class`
VIT_PYTORCH = """
vit.ViT simple_vit.SimpleViT cait.CaiT deepvit.DeepViT t2t.T2TViT cross_vit.CrossViT pit.PiT levit.LeViT cvt.CvT
twins_svt.TwinsSVT regionvit.RegionViT crossformer.CrossFormer scalable_vit.ScalableViT sep_vit.SepViT max_vit.MaxViT
nest.NesT mobile_vit.MobileViT xcit.XCiT ats_vit.ViT vit_with_patch_merger.ViT vit_with_patch_dropout.ViT
simple_vit_with_patch_dropout.SimpleViT na_vit.NaViT rvt.RvT cct.CCT vit_for_small_dataset.ViT
parallel_vit.ViT look_vit.LookViT normalized_vit.nViT simple_vit_with_register_tokens.SimpleViT
simple_vit_with_qk_norm.SimpleViT jumbo_vit.JumboViT vit_5.ViT
""".split()


# x-transformers (lucidrains): one TransformerWrapper per feature flag of its attention layers
X_TRANSFORMERS = """
decoder encoder rotary alibi t5-rel-bias dynamic-pos-bias xpos glu rmsnorm scalenorm simple-rmsnorm sandwich-norm
residual-attn shift-tokens macaron post-norm mem-kv memory-tokens gate-values head-scale
qk-norm one-kv-head gqa layer-dropout gate-residual scale-residual l2norm-embed post-emb-norm sparse-topk
value-residual softclamp-logits attn-laser hyper-connections encoder-mask xtransformer continuous vit
""".split()


# packages first measured on 2026-12-05, after the rules they test were written (the "lucid" set): lucidrains'
# quantizers, Perceiver, Performer and local attention, and Meta's ESM-2
VECTOR_QUANTIZE = """
vq vq-cosine vq-kmeans vq-dead-code vq-heads vq-lowdim vq-orthogonal vq-stochastic residual-vq grouped-residual-vq
fsq lfq residual-fsq residual-lfq latent-quantize simvq residual-simvq random-projection
""".split()
PERCEIVER = "perceiver perceiver-io perceiver-lm".split()
PERFORMER = "performer performer-causal performer-local-heads performer-generalized performer-rotary".split()
LOCAL_ATTENTION = "local-transformer local-attention local-attention-causal local-mha".split()
ESM = "esm2 esm2-no-token-dropout esm2-heads".split()
# the "moe" set (2026-12-05): routing and capacity logic, byte-level patches, ring attention on one process
MIXTURE_OF_EXPERTS = "moe moe-all heirarchical-moe".split()  # the threshold policy fails in eager (0.2.3)
SOFT_MOE = "soft-moe soft-moe-geglu dynamic-slots".split()
MEGABYTE = "megabyte megabyte-rel-pos".split()
RING_ATTENTION = "ring-transformer ring-transformer-causal ring-attention-gqa".split()
# the "kornia" set (2026-12-05, measured before any change for it): image augmentations, filters and colour
# modules of kornia (Python-heavy forwards: sampled parameters, per-batch flags), and a pure-PyTorch Mamba
KORNIA = """
aug-hflip aug-affine aug-colorjitter aug-resizedcrop aug-erasing aug-perspective aug-gaussianblur aug-clahe
aug-sequential canny sobel rgb-to-hsv extract-patches normalize
""".split()
MAMBAPY = "mamba mamba-sequential".split()
# the "lucid2" set (2026-12-05, measured before any change for it): axial attention, Reformer's LSH attention,
# linear attention, E(n)-equivariant graph networks, product-key memory and CoLT5's routed blocks
LUCID2 = {
    "axial_attention": "attention image-transformer reversible".split(),
    "reformer_pytorch": "lm lm-causal".split(),
    "linear_attention_transformer": "lm lm-causal lm-local".split(),
    "egnn_pytorch": "egnn network".split(),
    "product_key_memory": ["pkm"],
    "colt5_attention": "routed-ff routed-attn block".split(),
}
# the "mix" set (2026-12-05, measured before any change for it): speech (Conformer), minimal RNNs with a parallel
# scan (minGRU / minLSTM), Nystrom attention, tabular (TabNet's sparsemax / entmax masks), E(3)-equivariant layers
MIX = {
    "conformer": "block conformer".split(),
    "minGRU_pytorch": "mingru minlm minlm-lstm minlm-conv".split(),
    "nystrom_attention": "attention nystromformer".split(),
    "pytorch_tabnet": "sparsemax entmax".split(),
    "e3nn": "linear tensor-product gate".split(),
}
# the "rl" set (2026-12-05, measured before any change for it): Stable-Baselines3's policies (distributions over
# actions: categorical, diagonal Gaussian, squashed Gaussian; a Q-network's argmax)
RL = "ppo-discrete ppo-box dqn sac".split()


def all_names() -> list[str]:
    names = [f"timm:{n}" for n in TIMM]
    names += [f"transformers:{n}" for n in TRANSFORMERS_TEXT]
    names += [f"transformers-s2s:{n}" for n in TRANSFORMERS_SEQ2SEQ]
    names += [f"transformers-vision:{n}" for n in TRANSFORMERS_VISION]
    names += [f"transformers-audio:{n}" for n in TRANSFORMERS_AUDIO]
    names += [f"monai:{n}" for n in MONAI]
    names += [f"diffusers:{n}" for n in DIFFUSERS]
    names += [f"torch_geometric:{n}" for n in PYG]
    names += [f"vit_pytorch:{n}" for n in VIT_PYTORCH]
    names += [f"x_transformers:{n}" for n in X_TRANSFORMERS]
    names += [f"vector_quantize_pytorch:{n}" for n in VECTOR_QUANTIZE]
    names += [f"perceiver_pytorch:{n}" for n in PERCEIVER]
    names += [f"performer_pytorch:{n}" for n in PERFORMER]
    names += [f"local_attention:{n}" for n in LOCAL_ATTENTION]
    names += [f"esm:{n}" for n in ESM]
    names += [f"mixture_of_experts:{n}" for n in MIXTURE_OF_EXPERTS]
    names += [f"soft_moe_pytorch:{n}" for n in SOFT_MOE]
    names += [f"MEGABYTE_pytorch:{n}" for n in MEGABYTE]
    names += [f"ring_attention_pytorch:{n}" for n in RING_ATTENTION]
    names += [f"kornia:{n}" for n in KORNIA]
    names += [f"mambapy:{n}" for n in MAMBAPY]
    names += [f"{package}:{n}" for package, models in LUCID2.items() for n in models]
    names += [f"{package}:{n}" for package, models in MIX.items() for n in models]
    names += [f"stable_baselines3:{n}" for n in RL]
    return names


def package_of(name: str) -> str:
    return name.split(":", 1)[0].split("-", 1)[0]


@dataclass
class Built:
    model: Any
    sizes: list[int]
    make_inputs: Callable[[int, int], tuple[tuple, dict]]


def build(name: str) -> Built:
    family, _, model = name.partition(":")
    return {
        "timm": _timm,
        "transformers": _hf_text,
        "transformers-s2s": _hf_seq2seq,
        "transformers-vision": _hf_vision,
        "transformers-audio": _hf_audio,
        "monai": _monai,
        "diffusers": _diffusers,
        "torch_geometric": _pyg,
        "vit_pytorch": _vit_pytorch,
        "x_transformers": _x_transformers,
        "vector_quantize_pytorch": _vector_quantize,
        "perceiver_pytorch": _perceiver,
        "performer_pytorch": _performer,
        "local_attention": _local_attention,
        "esm": _esm,
        "mixture_of_experts": _mixture_of_experts,
        "soft_moe_pytorch": _soft_moe,
        "MEGABYTE_pytorch": _megabyte,
        "ring_attention_pytorch": _ring_attention,
        "kornia": _kornia,
        "mambapy": _mambapy,
        **{package: (lambda m, p=package: _lucid2(p, m)) for package in LUCID2},
        **{package: (lambda m, p=package: _mix(p, m)) for package in MIX},
        "stable_baselines3": _sb3,
    }[family](model)


# ---------------------------------------------------------------- timm


def _timm(name: str) -> Built:
    # timm imports torchvision at import time; the stand-in is installed only in timm's workers (one
    # package per worker), because transformers and MONAI test for torchvision and would take it as real
    import torchvision_stub

    torchvision_stub.install()
    import timm
    import torch

    model = None
    sized = True
    for kwargs in ({"img_size": 64, "dynamic_img_size": True}, {"img_size": 64}, {}):
        try:
            model = timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
            sized = bool(kwargs)
            break
        except TypeError:
            continue
    if model is None:
        raise RuntimeError("no constructor arguments accepted")
    if sized:
        sizes = [64, 96, 128]
    else:
        default = model.pretrained_cfg.get("input_size", (3, 224, 224))[-1]
        sizes = [default, 64, 96, 128]
    chans = model.pretrained_cfg.get("input_size", (3,))[0]

    def make(b: int, s: int):
        return (torch.randn(b, chans, s, s),), {}

    return Built(model, sizes, make)


# ---------------------------------------------------------------- transformers

_TINY = dict(
    hidden_size=32,
    d_model=32,
    n_embd=32,
    num_hidden_layers=2,
    num_layers=2,
    n_layer=2,
    num_attention_heads=2,
    n_head=2,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=64,
    ffn_dim=64,
    d_ff=64,
    n_inner=64,
    vocab_size=99,
    max_position_embeddings=256,
    n_positions=256,
    num_experts=4,
    num_local_experts=4,
    n_routed_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    embedding_size=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    num_decoder_layers=2,
    num_heads=2,
    d_kv=16,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    decoder_start_token_id=0,
    # multi-head latent attention (deepseek_v2/v3): rope and nope parts of the head sized to head_dim
    qk_rope_head_dim=16,
    qk_nope_head_dim=16,
    v_head_dim=16,
    kv_lora_rank=16,
    q_lora_rank=16,
    # hybrids (jamba, bamba): one attention layer among the two
    attn_layer_period=2,
    attn_layer_offset=1,
    expert_layer_period=2,
    expert_layer_offset=1,
    attn_layer_indices=[1],
)


def _tiny_config(model_type: str, extra: dict | None = None):
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    known = cfg.to_dict()
    for key, value in {**_TINY, **(extra or {})}.items():
        if key in known or hasattr(cfg, key):
            try:
                setattr(cfg, key, value)
            except Exception:  # some configs expose read-only properties
                pass
    # sliding-window / chunked attention and layer-type lists sized for the default depth, keeping one
    # layer of each kind: the first two of a hybrid's list are often both linear-attention (or mamba)
    # layers, and such a model has no attention cache to read its length from
    lists = {}
    for key in ("layer_types", "mlp_layer_types", "layers_block_type"):
        value = getattr(cfg, key, None)
        if isinstance(value, list) and value:
            lists[key] = list(dict.fromkeys(value)) if all(isinstance(v, str) for v in value) else value
    depth = max([2, *(len(kinds) for kinds in lists.values())])
    for key, kinds in lists.items():
        try:
            setattr(cfg, key, (kinds * depth)[:depth])
        except Exception:  # derived from other fields in some configs
            pass
    if depth > 2:
        for key in ("num_hidden_layers", "num_layers", "n_layer"):
            if hasattr(cfg, key):
                try:
                    setattr(cfg, key, depth)
                except Exception:
                    pass
    return cfg


def _hf_text(model_type: str) -> Built:
    import torch
    from transformers import AutoModel

    cfg = _tiny_config(model_type)
    model = AutoModel.from_config(cfg)
    vocab = min(getattr(cfg, "vocab_size", 99) or 99, 99)

    def make(b: int, s: int):
        return (), {"input_ids": torch.randint(3, vocab, (b, s))}

    return Built(model, [8, 12, 16], make)


def _hf_seq2seq(model_type: str) -> Built:
    import torch
    from transformers import AutoModel

    cfg = _tiny_config(model_type)
    model = AutoModel.from_config(cfg)
    vocab = min(getattr(cfg, "vocab_size", 99) or 99, 99)

    def make(b: int, s: int):
        return (), {
            "input_ids": torch.randint(3, vocab, (b, s)),
            "decoder_input_ids": torch.randint(3, vocab, (b, s // 2)),
        }

    return Built(model, [8, 12, 16], make)


def _hf_audio(model_type: str) -> Built:
    import torch
    from transformers import AutoModel

    if model_type == "whisper":
        cfg = _tiny_config(model_type, dict(num_mel_bins=16, max_source_positions=16, max_target_positions=32,
                                            encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64))
        model = AutoModel.from_config(cfg)
        # Whisper's encoder takes exactly 2 x max_source_positions frames: the decoder's length varies
        return Built(model, [4, 6, 8], lambda b, s: ((), {
            "input_features": torch.randn(b, 16, 32), "decoder_input_ids": torch.randint(3, 99, (b, s))}))
    cfg = _tiny_config(model_type, dict(
        conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_feat_extract_layers=3,
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, mask_time_prob=0.05, mask_time_length=2,
    ))
    model = AutoModel.from_config(cfg)
    return Built(model, [400, 600, 800], lambda b, s: ((torch.randn(b, s),), {}))  # samples: 20 to 40 frames


def _hf_vision(model_type: str) -> Built:
    import torch
    from transformers import AutoModel

    extra = dict(
        image_size=32,
        patch_size=4,
        num_channels=3,
        hidden_sizes=[8, 16, 24, 32],
        depths=[1, 1, 1, 1],
        embed_dim=16,
        embed_dims=[8, 16, 24, 32],
        num_heads=[1, 2, 2, 4],
    )
    # per type: a window that fits the 8x8 patch grid (swin), group norms over 8 channels (bit), a head
    # count per stage that divides the stage widths (pvt_v2)
    extra.update({
        "swin": {"window_size": 2}, "swinv2": {"window_size": 2}, "bit": {"num_groups": 8},
        "pvt_v2": {"num_attention_heads": [1, 2, 2, 4]},
    }.get(model_type, {}))
    cfg = _tiny_config(model_type, extra)
    model = AutoModel.from_config(cfg)

    def make(b: int, s: int):
        return (), {"pixel_values": torch.randn(b, 3, s, s)}

    return Built(model, [32, 64, 96], make)


# ---------------------------------------------------------------- MONAI


def _monai(name: str) -> Built:
    import torch
    from monai.networks import nets

    two = dict(spatial_dims=2)
    io = dict(in_channels=1, out_channels=2)
    specs: dict[str, tuple[Callable[[], Any], list[int], int]] = {
        "UNet": (lambda: nets.UNet(**two, **io, channels=(4, 8, 16), strides=(2, 2)), [32, 48, 64], 1),
        "BasicUNet": (lambda: nets.BasicUNet(**two, **io, features=(4, 4, 8, 16, 32, 4)), [32, 48, 64], 1),
        "BasicUNetPlusPlus": (
            lambda: nets.BasicUNetPlusPlus(**two, **io, features=(4, 4, 8, 16, 32, 4)),
            [32, 48, 64],
            1,
        ),
        "AttentionUnet": (lambda: nets.AttentionUnet(**two, **io, channels=(4, 8, 16), strides=(2, 2)), [32, 48, 64], 1),
        "SegResNet": (lambda: nets.SegResNet(**two, **io, init_filters=8), [32, 48, 64], 1),
        "SegResNetVAE": (lambda: nets.SegResNetVAE(input_image_size=(32, 32), **two, **io, init_filters=8), [32], 1),
        "SegResNetDS": (lambda: nets.SegResNetDS(**two, **io, init_filters=8), [32, 48, 64], 1),
        "DynUNet": (
            lambda: nets.DynUNet(**two, **io, kernel_size=[3, 3, 3], strides=[1, 2, 2], upsample_kernel_size=[2, 2]),
            [32, 48, 64],
            1,
        ),
        "UNETR": (
            lambda: nets.UNETR(**io, img_size=(32, 32), spatial_dims=2, feature_size=4, hidden_size=32, mlp_dim=64, num_heads=2),
            [32],
            1,
        ),
        "SwinUNETR": (
            lambda: nets.SwinUNETR(**io, spatial_dims=2, feature_size=12, depths=(1, 1, 1, 1), num_heads=(1, 1, 1, 1)),
            [32, 64, 96],
            1,
        ),
        "DenseNet121": (lambda: nets.DenseNet121(**two, in_channels=1, out_channels=3), [32, 48, 64], 1),
        "ResNet": (
            lambda: nets.ResNet("basic", [1, 1, 1, 1], [8, 8, 16, 16], spatial_dims=2, n_input_channels=1, num_classes=3),
            [32, 48, 64],
            1,
        ),
        "VNet": (lambda: nets.VNet(**two, in_channels=1, out_channels=2), [32, 48, 64], 1),
        "HighResNet": (lambda: nets.HighResNet(**two, **io), [16, 24, 32], 1),
        "AutoEncoder": (lambda: nets.AutoEncoder(**two, **io, channels=(4, 8), strides=(2, 2)), [32, 48, 64], 1),
        "VarAutoEncoder": (
            lambda: nets.VarAutoEncoder(**two, in_shape=(1, 32, 32), out_channels=1, latent_size=4, channels=(4, 8), strides=(2, 2)),
            [32],
            1,
        ),
        "Regressor": (lambda: nets.Regressor(in_shape=(1, 32, 32), out_shape=(3,), channels=(4, 8), strides=(2, 2)), [32], 1),
        "Classifier": (lambda: nets.Classifier(in_shape=(1, 32, 32), classes=3, channels=(4, 8), strides=(2, 2)), [32], 1),
        "Discriminator": (lambda: nets.Discriminator(in_shape=(1, 32, 32), channels=(4, 8), strides=(2, 2)), [32], 1),
        "Generator": (lambda: nets.Generator(latent_shape=(8,), start_shape=(4, 8, 8), channels=(4, 1), strides=(2, 2)), [8], 0),
        "EfficientNetBN": (
            lambda: nets.EfficientNetBN("efficientnet-b0", pretrained=False, spatial_dims=2, in_channels=1, num_classes=3),
            [32, 48, 64],
            1,
        ),
        "ViT": (
            lambda: nets.ViT(in_channels=1, img_size=(32, 32), patch_size=(8, 8), hidden_size=32, mlp_dim=64, num_layers=2, num_heads=2, spatial_dims=2, classification=True),
            [32],
            1,
        ),
        "ViTAutoEnc": (
            lambda: nets.ViTAutoEnc(in_channels=1, img_size=(32, 32), patch_size=(8, 8), hidden_size=32, mlp_dim=64, num_layers=2, num_heads=2, spatial_dims=2),
            [32],
            1,
        ),
        "LocalNet": (
            lambda: nets.LocalNet(**two, in_channels=2, out_channels=2, num_channel_initial=4, extract_levels=(0, 1, 2)),
            [32, 48, 64],
            2,
        ),
        "GlobalNet": (
            lambda: nets.GlobalNet(image_size=(32, 32), spatial_dims=2, in_channels=2, num_channel_initial=4, depth=2),
            [32],
            2,
        ),
        "RegUNet": (
            lambda: nets.RegUNet(**two, in_channels=2, num_channel_initial=4, depth=2, out_channels=2),
            [32, 48, 64],
            2,
        ),
        "MedNeXt": (lambda: nets.MedNeXt(**two, **io, init_filters=4, blocks_down=(1, 1, 1, 1, 1), blocks_bottleneck=1, blocks_up=(1, 1, 1, 1)), [32, 64, 96], 1),
        "Quicknat": (lambda: nets.Quicknat(num_classes=2, num_channels=1, num_filters=8), [32, 48, 64], 1),
        "VoxelMorph": (lambda: nets.VoxelMorph(spatial_dims=2, in_channels=2), [32, 48, 64], 0),
        "FullyConnectedNet": (lambda: nets.FullyConnectedNet(8, 3, [16, 16]), [8], 0),
        "VarFullyConnectedNet": (lambda: nets.VarFullyConnectedNet(8, 8, 4, (16,), (16,)), [8], 0),
        "AutoencoderKL": (
            lambda: nets.AutoencoderKL(spatial_dims=2, in_channels=1, out_channels=1, channels=(8, 8), latent_channels=2, num_res_blocks=1, norm_num_groups=4, attention_levels=(False, True)),
            [16, 24, 32],
            1,
        ),
        "DiffusionModelUNet": (
            lambda: nets.DiffusionModelUNet(spatial_dims=2, in_channels=1, out_channels=1, channels=(8, 8), attention_levels=(False, True), num_res_blocks=1, norm_num_groups=4, num_head_channels=8),
            [16, 24, 32],
            -1,
        ),
        "PatchDiscriminator": (lambda: nets.PatchDiscriminator(spatial_dims=2, in_channels=1, channels=8, num_layers_d=2), [32, 48, 64], 1),
        "VQVAE": (
            lambda: nets.VQVAE(spatial_dims=2, in_channels=1, out_channels=1, channels=(8, 8), num_res_channels=8, num_res_layers=1, downsample_parameters=((2, 4, 1, 1), (2, 4, 1, 1)), upsample_parameters=((2, 4, 1, 1, 0), (2, 4, 1, 1, 0)), num_embeddings=16, embedding_dim=4),
            [16, 24, 32],
            1,
        ),
        "DAF3D": (lambda: nets.DAF3D(in_channels=1, out_channels=1), [32], 3),
        "SEResNet50": (lambda: nets.SEResNet50(spatial_dims=2, in_channels=1, num_classes=3), [32, 48, 64], 1),
        "AHNet": (lambda: nets.AHNet(spatial_dims=2, in_channels=1, out_channels=2, psp_block_num=0), [64, 96, 128], 1),
        "HoVerNet": (lambda: nets.HoVerNet(in_channels=3, out_classes=2, decoder_padding=True), [64, 96, 128], 3),
        "DecoderOnlyTransformer": (
            lambda: nets.DecoderOnlyTransformer(num_tokens=16, max_seq_len=32, attn_layers_dim=16, attn_layers_depth=2, attn_layers_heads=2),
            [8, 12, 16],
            -2,
        ),
        "MaskedAutoEncoderViT": (
            lambda: nets.MaskedAutoEncoderViT(in_channels=1, img_size=(32, 32), patch_size=(8, 8), hidden_size=32, mlp_dim=64,
                                              num_layers=2, num_heads=2, decoder_hidden_size=16, decoder_mlp_dim=32,
                                              decoder_num_layers=1, decoder_num_heads=2, spatial_dims=2),
            [32],
            1,
        ),
        "SegResNetDS2": (lambda: nets.SegResNetDS2(**two, **io, init_filters=8), [32, 48, 64], 1),
        "Critic": (lambda: nets.Critic(in_shape=(1, 32, 32), channels=(4, 8), strides=(2, 2)), [32], 1),
        "MultiScalePatchDiscriminator": (
            lambda: nets.MultiScalePatchDiscriminator(num_d=2, num_layers_d=2, spatial_dims=2, channels=8, in_channels=1, minimum_size_im=32),
            [32, 48, 64],
            1,
        ),
    }
    ctor, sizes, chans = specs[name]
    model = ctor()

    def make(b: int, s: int):
        if chans == 0:  # vector input (latent code / features) of a fixed width; s is its size
            if name == "VoxelMorph":
                return (torch.randn(b, 1, s, s), torch.randn(b, 1, s, s)), {}
            return (torch.randn(b, s),), {}
        if chans == -1:  # diffusion UNet: image and timesteps
            return (torch.randn(b, 1, s, s), torch.randint(0, 100, (b,))), {}
        if chans == -2:  # token sequence
            return (torch.randint(0, 16, (b, s)),), {}
        if chans == 3 and name == "DAF3D":
            return (torch.randn(b, 1, s, s, s),), {}
        return (torch.randn(b, chans, s, s),), {}

    return Built(model, sizes, make)


# ---------------------------------------------------------------- diffusers


def _diffusers(name: str) -> Built:
    import diffusers as d
    import torch

    def steps(b: int):
        return torch.randint(1, 1000, (b,))

    # name -> (constructor, sizes, inputs for (batch, size)); sizes are spatial sizes, or (Flux) image tokens
    unet_blocks = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
    vae_blocks = dict(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64), norm_num_groups=8,
    )
    specs: dict[str, tuple[Callable[[], Any], list[int], Callable[[int, int], tuple[tuple, dict]]]] = {
        "UNet2DModel": (
            lambda: d.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                  up_block_types=("AttnUpBlock2D", "UpBlock2D"), attention_head_dim=8, **unet_blocks),
            [16, 24, 32],
            lambda b, s: ((torch.randn(b, 3, s, s), steps(b)), {}),
        ),
        "UNet2DConditionModel": (
            lambda: d.UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, cross_attention_dim=32, attention_head_dim=8,
                                           down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                           up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), **unet_blocks),
            [16, 24, 32],
            lambda b, s: ((torch.randn(b, 4, s, s), steps(b), torch.randn(b, 7, 32)), {}),
        ),
        "AutoencoderKL": (
            lambda: d.AutoencoderKL(latent_channels=4, **vae_blocks),
            [16, 24, 32],
            lambda b, s: ((torch.randn(b, 3, s, s),), {}),
        ),
        "VQModel": (
            lambda: d.VQModel(latent_channels=3, num_vq_embeddings=16, vq_embed_dim=3, **vae_blocks),
            [16, 24, 32],
            lambda b, s: ((torch.randn(b, 3, s, s),), {}),
        ),
        "DiTTransformer2DModel": (
            lambda: d.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8, num_layers=2,
                                            sample_size=8, patch_size=2, norm_num_groups=8, num_embeds_ada_norm=10),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 4, s, s),), {"timestep": steps(b), "class_labels": torch.randint(0, 10, (b,))}),
        ),
        "SD3Transformer2DModel": (
            lambda: d.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                                            num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                            pooled_projection_dim=8, out_channels=4, pos_embed_max_size=16),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 4, s, s), torch.randn(b, 5, 16), torch.randn(b, 8), steps(b)), {}),
        ),
        "FluxTransformer2DModel": (
            lambda: d.FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
                                             num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
                                             axes_dims_rope=(4, 4, 8)),
            [16, 24, 32],
            lambda b, s: ((torch.randn(b, s, 4),), dict(
                encoder_hidden_states=torch.randn(b, 8, 32), pooled_projections=torch.randn(b, 32),
                timestep=torch.rand(b), img_ids=torch.randn(s, 3), txt_ids=torch.randn(8, 3))),
        ),
        "PixArtTransformer2DModel": (
            lambda: d.PixArtTransformer2DModel(sample_size=8, num_layers=1, patch_size=2, attention_head_dim=8, num_attention_heads=2,
                                               caption_channels=16, in_channels=4, cross_attention_dim=16, out_channels=8,
                                               attention_bias=True, activation_fn="gelu-approximate", num_embeds_ada_norm=1000,
                                               norm_type="ada_norm_single", norm_elementwise_affine=False, norm_eps=1e-6),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 4, s, s),), dict(
                encoder_hidden_states=torch.randn(b, 5, 16), timestep=steps(b),
                added_cond_kwargs={"aspect_ratio": None, "resolution": None})),
        ),
        "WanTransformer3DModel": (
            lambda: d.WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=4,
                                            out_channels=4, text_dim=16, freq_dim=32, ffn_dim=32, num_layers=2, cross_attn_norm=True,
                                            qk_norm="rms_norm_across_heads", rope_max_seq_len=32),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 4, 2, s, s), steps(b), torch.randn(b, 5, 16)), {}),
        ),
        "LTXVideoTransformer3DModel": (
            lambda: d.LTXVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8,
                                                 cross_attention_dim=16, num_layers=1, caption_channels=16,
                                                 qk_norm="rms_norm_across_heads"),
            [4, 6, 8],
            lambda b, s: ((torch.randn(b, s * s, 4), torch.randn(b, 5, 16), steps(b)), dict(
                encoder_attention_mask=torch.ones(b, 5), num_frames=1, height=s, width=s)),
        ),
        "HunyuanVideoTransformer3DModel": (
            lambda: d.HunyuanVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=10,
                                                     num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=1,
                                                     patch_size_t=1, guidance_embeds=True, text_embed_dim=16,
                                                     pooled_projection_dim=8, rope_axes_dim=(2, 4, 4)),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 4, 1, s, s), steps(b), torch.randn(b, 5, 16), torch.ones(b, 5), torch.randn(b, 8)),
                          dict(guidance=torch.full((b,), 1000.0))),
        ),
        "CogVideoXTransformer3DModel": (
            lambda: d.CogVideoXTransformer3DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4,
                                                  time_embed_dim=2, text_embed_dim=16, num_layers=1, sample_width=8, sample_height=8,
                                                  sample_frames=9, patch_size=2, temporal_compression_ratio=4, max_text_seq_length=8),
            [8, 12, 16],
            lambda b, s: ((torch.randn(b, 1, 4, s, s), torch.randn(b, 8, 16), steps(b)), {}),
        ),
    }
    ctor, sizes, make = specs[name]
    return Built(ctor(), sizes, make)


# ---------------------------------------------------------------- PyTorch Geometric


def _pyg(name: str) -> Built:
    import torch
    import torch_geometric.nn as g

    feats, hidden, edge_dim = 8, 16, 4

    def graphs(b: int, s: int):
        """`b` random graphs of `s` nodes each, about 3 edges per node, as one batch."""
        n = b * s
        src = torch.randint(0, s, (b, 3 * s)) + (torch.arange(b) * s)[:, None]
        dst = torch.randint(0, s, (b, 3 * s)) + (torch.arange(b) * s)[:, None]
        edge_index = torch.stack([src.flatten(), dst.flatten()])
        batch = torch.arange(b).repeat_interleave(s)
        return torch.randn(n, feats), edge_index, batch

    def plain(b, s):
        x, ei, _ = graphs(b, s)
        return (x, ei), {}

    def with_edges(b, s):
        x, ei, _ = graphs(b, s)
        return (x, ei, torch.randn(ei.size(1), edge_dim)), {}

    def with_batch(b, s):
        x, ei, batch = graphs(b, s)
        return (x, ei), {"batch": batch}

    def with_x0(b, s):
        x, ei, _ = graphs(b, s)
        return (x, x.clone(), ei), {}

    def with_pos(b, s):
        x, ei, _ = graphs(b, s)
        return (x, torch.randn(x.size(0), 3), ei), {}

    def hyper(b, s):
        x, ei, _ = graphs(b, s)
        return (x, ei), {}

    class Pooled(torch.nn.Module):
        """A conv, a pooling layer, a global readout: how pooling layers are used."""

        def __init__(self, pool):
            super().__init__()
            self.conv = g.GCNConv(feats, hidden)
            self.pool = pool

        def forward(self, x, edge_index, batch):
            x = self.conv(x, edge_index).relu()
            out = self.pool(x, edge_index, batch=batch)
            return g.global_mean_pool(out[0], out[3] if len(out) > 3 else out[-1])

    class EdgePooled(Pooled):
        def forward(self, x, edge_index, batch):
            x = self.conv(x, edge_index).relu()
            x, edge_index, batch, _ = self.pool(x, edge_index, batch)
            return g.global_mean_pool(x, batch)

    def pooled(b, s):
        x, ei, batch = graphs(b, s)
        return (x, ei, batch), {}

    basic = dict(in_channels=feats, hidden_channels=hidden, num_layers=2, out_channels=4)
    deg = torch.tensor([0, 2, 4, 6, 4, 2, 1])
    specs: dict[str, tuple[Callable[[], Any], Callable[[int, int], tuple[tuple, dict]]]] = {
        "GCN": (lambda: g.GCN(**basic), plain),
        "GraphSAGE": (lambda: g.GraphSAGE(**basic), plain),
        "GIN": (lambda: g.GIN(**basic), plain),
        "GAT": (lambda: g.GAT(**basic, heads=2), plain),
        "PNA": (lambda: g.PNA(**basic, aggregators=["mean", "min", "max", "std"],
                              scalers=["identity", "amplification", "attenuation"], deg=deg), plain),
        "EdgeCNN": (lambda: g.EdgeCNN(**basic), plain),
        "GraphUNet": (lambda: g.GraphUNet(feats, hidden, 4, depth=2), with_batch),
        "AttentiveFP": (lambda: g.AttentiveFP(feats, hidden, 4, edge_dim=edge_dim, num_layers=2, num_timesteps=2),
                        lambda b, s: (with_edges(b, s)[0] + (graphs(b, s)[2],), {})),
        "NeuralFingerprint": (lambda: g.NeuralFingerprint(feats, hidden, 4, num_layers=2), with_batch),
        "PMLP": (lambda: g.PMLP(feats, hidden, 4, num_layers=2), plain),
        "RECT_L": (lambda: g.RECT_L(feats, hidden), plain),
        "Polynormer": (lambda: g.Polynormer(feats, hidden, 4, local_layers=1, global_layers=1, heads=2),
                       lambda b, s: ((*graphs(b, s),), {})),
        "GCNConv": (lambda: g.GCNConv(feats, hidden), plain),
        "GATConv": (lambda: g.GATConv(feats, hidden, heads=2), plain),
        "GATv2Conv": (lambda: g.GATv2Conv(feats, hidden, heads=2), plain),
        "TransformerConv": (lambda: g.TransformerConv(feats, hidden, heads=2), plain),
        "SAGEConv": (lambda: g.SAGEConv(feats, hidden), plain),
        "GraphConv": (lambda: g.GraphConv(feats, hidden), plain),
        "ChebConv": (lambda: g.ChebConv(feats, hidden, K=2), plain),
        "GatedGraphConv": (lambda: g.GatedGraphConv(hidden, num_layers=2), lambda b, s: (
            (torch.randn(b * s, hidden), graphs(b, s)[1]), {})),
        "ResGatedGraphConv": (lambda: g.ResGatedGraphConv(feats, hidden), plain),
        "ARMAConv": (lambda: g.ARMAConv(feats, hidden, num_stacks=2, num_layers=2), plain),
        "SGConv": (lambda: g.SGConv(feats, hidden, K=2), plain),
        "APPNP": (lambda: g.APPNP(K=3, alpha=0.1), plain),
        "TAGConv": (lambda: g.TAGConv(feats, hidden, K=2), plain),
        "GENConv": (lambda: g.GENConv(feats, hidden, aggr="softmax", learn_t=True), plain),
        "FeaStConv": (lambda: g.FeaStConv(feats, hidden, heads=2), plain),
        "SuperGATConv": (lambda: g.SuperGATConv(feats, hidden, heads=2), plain),
        "FiLMConv": (lambda: g.FiLMConv(feats, hidden), plain),
        "GeneralConv": (lambda: g.GeneralConv(feats, hidden, attention=True), plain),
        "ClusterGCNConv": (lambda: g.ClusterGCNConv(feats, hidden), plain),
        "LEConv": (lambda: g.LEConv(feats, hidden), plain),
        "MFConv": (lambda: g.MFConv(feats, hidden, max_degree=4), plain),
        "EGConv": (lambda: g.EGConv(feats, hidden, aggregators=["sum", "max"], num_heads=2, num_bases=2), plain),
        "GCN2Conv": (lambda: g.GCN2Conv(feats, alpha=0.1, theta=0.5, layer=1), with_x0),
        "NNConv": (lambda: g.NNConv(feats, hidden, torch.nn.Linear(edge_dim, feats * hidden)), with_edges),
        "CGConv": (lambda: g.CGConv(feats, dim=edge_dim), with_edges),
        "GINEConv": (lambda: g.GINEConv(torch.nn.Linear(feats, hidden), edge_dim=edge_dim), with_edges),
        "GMMConv": (lambda: g.GMMConv(feats, hidden, dim=edge_dim, kernel_size=2), with_edges),
        "PointNetConv": (lambda: g.PointNetConv(torch.nn.Linear(feats + 3, hidden)), with_pos),
        "PointTransformerConv": (lambda: g.PointTransformerConv(feats, hidden), with_pos),
        "HypergraphConv": (lambda: g.HypergraphConv(feats, hidden), hyper),
        "LGConv": (lambda: g.LGConv(), plain),
        "SSGConv": (lambda: g.SSGConv(feats, hidden, alpha=0.1, K=2), plain),
        "AntiSymmetricConv": (lambda: g.AntiSymmetricConv(feats), plain),
        "DirGNNConv": (lambda: g.DirGNNConv(g.GCNConv(feats, hidden)), plain),
        "GPSConv": (lambda: g.GPSConv(feats, g.GCNConv(feats, feats), heads=2), with_batch),
        "WLConvContinuous": (lambda: g.WLConvContinuous(), plain),
        "TopKPooling": (lambda: Pooled(g.TopKPooling(hidden, ratio=0.5)), pooled),
        "SAGPooling": (lambda: Pooled(g.SAGPooling(hidden, ratio=0.5)), pooled),
        "EdgePooling": (lambda: EdgePooled(g.EdgePooling(hidden)), pooled),
        "ASAPooling": (lambda: Pooled(g.ASAPooling(hidden, ratio=0.5)), pooled),
    }
    ctor, make = specs[name]
    return Built(ctor(), [8, 12, 16], make)


# ---------------------------------------------------------------- vit-pytorch


def _vit_pytorch(name: str) -> Built:
    # vit_pytorch's __init__ imports its DINO trainer, which imports torchvision: the stand-in again
    import importlib

    import torchvision_stub

    torchvision_stub.install()
    import torch

    module, _, cls = name.partition(".")
    ctor = getattr(importlib.import_module(f"vit_pytorch.{module}"), cls)
    small = dict(image_size=32, patch_size=8, num_classes=10, dim=32, depth=2, heads=2, mlp_dim=64, dim_head=16)
    stages = dict(num_classes=10, channels=3)
    kwargs: dict[str, dict] = {
        "cait": dict(small, cls_depth=1),
        "pit": dict(small, depth=(1, 1)),
        "xcit": dict(small, cls_depth=1),
        "ats_vit": dict(small, max_tokens_per_depth=(12, 6)),
        "t2t": dict(image_size=32, num_classes=10, dim=32, depth=2, heads=2, mlp_dim=64, dim_head=16),
        "cross_vit": dict(image_size=32, num_classes=10, sm_dim=32, lg_dim=32, sm_patch_size=8, lg_patch_size=16,
                          sm_enc_depth=1, sm_enc_heads=2, sm_enc_mlp_dim=64, sm_enc_dim_head=16, lg_enc_depth=1,
                          lg_enc_heads=2, lg_enc_mlp_dim=64, lg_enc_dim_head=16, cross_attn_depth=1, cross_attn_heads=2,
                          cross_attn_dim_head=16, depth=1),
        "levit": dict(image_size=64, num_classes=10, dim=(32, 48, 64), depth=1, heads=(2, 2, 2), mlp_mult=2,
                      dim_key=16, dim_value=16),
        "cvt": dict(num_classes=10, s1_emb_dim=16, s2_emb_dim=32, s2_depth=1, s2_heads=2, s3_emb_dim=64, s3_depth=1,
                    s3_heads=2),
        "twins_svt": dict(num_classes=10, s1_emb_dim=16, s2_emb_dim=32, s3_emb_dim=64, s3_depth=1, s4_emb_dim=64),
        "regionvit": dict(dim=(16, 32, 64, 128), depth=(1, 1, 1, 1), window_size=7, num_classes=10),
        "crossformer": dict(dim=(32, 64, 128, 256), depth=(1, 1, 1, 1), num_classes=10),
        "scalable_vit": dict(stages, dim=16, depth=(1, 1, 1, 1), heads=(1, 2, 4, 8), reduction_factor=(8, 4, 2, 1),
                             window_size=(8, 8, 4, None)),
        "sep_vit": dict(stages, dim=16, depth=(1, 1, 1, 1), heads=(1, 2, 4, 8), window_size=4, dim_head=8),
        "max_vit": dict(stages, dim=16, depth=(1, 1), dim_head=8, dim_conv_stem=16, window_size=4),
        "nest": dict(image_size=32, patch_size=4, num_classes=10, dim=32, heads=2, num_hierarchies=2, block_repeats=(1, 1)),
        "mobile_vit": dict(image_size=(64, 64), dims=[32, 32, 32], channels=[8, 8, 16, 16, 24, 24, 32, 32, 48, 48, 64],
                           num_classes=10),
        "cct": dict(img_size=32, embedding_dim=32, n_conv_layers=1, kernel_size=3, stride=1, padding=1,
                    pooling_kernel_size=3, pooling_stride=2, pooling_padding=1, num_layers=2, num_heads=2, mlp_ratio=2.0,
                    num_classes=10, positional_embedding="learnable"),
        "look_vit": dict(dim=32, image_size=32, num_classes=10, depth=1, patch_size=8, highres_patch_size=4, heads=2,
                         dim_head=16, cross_attn_heads=2, cross_attn_dim_head=16),
    }.get(module, small)
    model = ctor(**kwargs)
    side = kwargs.get("image_size", kwargs.get("img_size", 64))
    side = side[0] if isinstance(side, tuple) else side
    sizes = [side, side * 2, side * 3]  # most fix the size in their position embedding: the probe keeps what runs
    if module in ("twins_svt", "regionvit", "crossformer", "sep_vit"):  # windows of 7 over 4 stages
        sizes = [224, 448]

    if module == "na_vit":  # NaViT packs a list of lists of images of their own sizes into one sequence
        def make(b: int, s: int):
            return ([[torch.randn(3, s, s), torch.randn(3, s, s // 2)] for _ in range(b)],), {}
    else:
        def make(b: int, s: int):
            return (torch.randn(b, 3, s, s),), {}

    return Built(model, sizes, make)


# ---------------------------------------------------------------- x-transformers


def _x_transformers(name: str) -> Built:
    import torch
    import x_transformers as xt

    layer = dict(dim=32, depth=2, heads=2, attn_dim_head=16)
    flags = {
        "decoder": {}, "encoder": {}, "rotary": dict(rotary_pos_emb=True), "alibi": dict(alibi_pos_bias=True),
        "t5-rel-bias": dict(rel_pos_bias=True), "dynamic-pos-bias": dict(dynamic_pos_bias=True),
        "xpos": dict(rotary_xpos=True), "glu": dict(ff_glu=True), "rmsnorm": dict(use_rmsnorm=True),
        "scalenorm": dict(use_scalenorm=True), "simple-rmsnorm": dict(use_simple_rmsnorm=True),
        "sandwich-norm": dict(sandwich_norm=True),
        "residual-attn": dict(residual_attn=True), "shift-tokens": dict(shift_tokens=1), "macaron": dict(macaron=True),
        "post-norm": dict(pre_norm=False),
        "mem-kv": dict(attn_num_mem_kv=4), "gate-values": dict(attn_gate_values=True),
        "head-scale": dict(attn_head_scale=True), "qk-norm": dict(attn_qk_norm=True),
        "one-kv-head": dict(attn_one_kv_head=True), "gqa": dict(heads=4, attn_kv_heads=2),
        "layer-dropout": dict(layer_dropout=0.5), "gate-residual": dict(gate_residual=True),
        "scale-residual": dict(scale_residual=True), "sparse-topk": dict(attn_sparse_topk=4),
        "value-residual": dict(add_value_residual=True), "softclamp-logits": dict(attn_softclamp_logits=True),
        "attn-laser": dict(attn_laser=True), "hyper-connections": dict(num_residual_streams=2),
        "encoder-mask": {},
    }
    wrapper = {"memory-tokens": dict(num_memory_tokens=4), "l2norm-embed": dict(l2norm_embed=True),
               "post-emb-norm": dict(post_emb_norm=True)}

    def tokens(b: int, s: int):
        return torch.randint(0, 100, (b, s))

    if name == "xtransformer":
        model = xt.XTransformer(dim=32, enc_num_tokens=100, enc_depth=1, enc_heads=2, enc_max_seq_len=64,
                                dec_num_tokens=100, dec_depth=1, dec_heads=2, dec_max_seq_len=64)
        return Built(model, [16, 24, 32], lambda b, s: ((tokens(b, s), tokens(b, s)), {}))
    if name == "continuous":
        model = xt.ContinuousTransformerWrapper(dim_in=8, dim_out=8, max_seq_len=64, attn_layers=xt.Encoder(**layer))
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, 8),), {}))
    if name == "vit":
        model = xt.ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10, attn_layers=xt.Encoder(**layer))
        return Built(model, [32, 48, 64], lambda b, s: ((torch.randn(b, 3, s, s),), {}))
    layers = (xt.Encoder if name.startswith("encoder") else xt.Decoder)(**{**layer, **flags.get(name, {})})
    model = xt.TransformerWrapper(num_tokens=100, max_seq_len=64, attn_layers=layers, **wrapper.get(name, {}))
    if name == "encoder-mask":  # padding masks of per-row lengths
        def make(b: int, s: int):
            mask = torch.arange(s)[None, :] < torch.randint(s // 2, s + 1, (b, 1))
            return (tokens(b, s),), {"mask": mask}
        return Built(model, [16, 24, 32], make)
    return Built(model, [16, 24, 32], lambda b, s: ((tokens(b, s),), {}))


# ---------------------------------------------------------------- the lucid set (2026-12-05)


def _vector_quantize(name: str) -> Built:
    import torch
    import vector_quantize_pytorch as vq

    dim = 16
    vq_options = {
        "vq": {}, "vq-cosine": dict(use_cosine_sim=True), "vq-kmeans": dict(kmeans_init=True, kmeans_iters=2),
        "vq-dead-code": dict(threshold_ema_dead_code=2), "vq-heads": dict(heads=2, separate_codebook_per_head=True),
        "vq-lowdim": dict(codebook_dim=4), "vq-orthogonal": dict(orthogonal_reg_weight=1.0),
        "vq-stochastic": dict(stochastic_sample_codes=True, sample_codebook_temp=0.1),
    }
    if name in vq_options:
        model = vq.VectorQuantize(dim=dim, codebook_size=32, **vq_options[name])
    elif name == "residual-vq":
        model = vq.ResidualVQ(dim=dim, num_quantizers=2, codebook_size=32)
    elif name == "grouped-residual-vq":
        model = vq.GroupedResidualVQ(dim=dim, num_quantizers=2, groups=2, codebook_size=32)
    elif name == "fsq":
        model = vq.FSQ(levels=[8, 5, 5], dim=dim)
    elif name == "lfq":
        model = vq.LFQ(codebook_size=16, dim=dim, entropy_loss_weight=0.1)
    elif name == "residual-fsq":
        model = vq.ResidualFSQ(dim=dim, levels=[8, 5, 5], num_quantizers=2)
    elif name == "residual-lfq":
        model = vq.ResidualLFQ(dim=dim, codebook_size=16, num_quantizers=2)
    elif name == "latent-quantize":
        model = vq.LatentQuantize(levels=[5, 5, 8], dim=dim, commitment_loss_weight=0.1, quantization_loss_weight=0.1)
    elif name == "simvq":
        model = vq.SimVQ(dim=dim, codebook_size=32)
    elif name == "residual-simvq":
        model = vq.ResidualSimVQ(dim=dim, num_quantizers=2, codebook_size=32)
    else:  # random-projection
        model = vq.RandomProjectionQuantizer(dim=dim, codebook_size=32, codebook_dim=8)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, dim),), {}))


def _perceiver(name: str) -> Built:
    import torch
    import perceiver_pytorch as pp

    if name == "perceiver":
        model = pp.Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0, depth=2, num_latents=16,
                             latent_dim=32, cross_heads=1, latent_heads=2, cross_dim_head=16, latent_dim_head=16,
                             num_classes=10)
        return Built(model, [8, 12, 16], lambda b, s: ((torch.randn(b, s, s, 3),), {}))
    if name == "perceiver-io":
        model = pp.PerceiverIO(dim=8, queries_dim=16, logits_dim=10, depth=2, num_latents=16, latent_dim=32,
                               cross_heads=1, latent_heads=2, cross_dim_head=16, latent_dim_head=16)
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, 8),), {"queries": torch.randn(b, 4, 16)}))
    model = pp.PerceiverLM(num_tokens=100, dim=32, depth=2, max_seq_len=64, num_latents=16, latent_dim=32,
                           cross_heads=1, latent_heads=2, cross_dim_head=16, latent_dim_head=16)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 100, (b, s)),), {}))


def _performer(name: str) -> Built:
    import torch
    import performer_pytorch as pf

    options = {
        "performer": {}, "performer-causal": dict(causal=True), "performer-local-heads": dict(local_attn_heads=1),
        "performer-generalized": dict(generalized_attention=True), "performer-rotary": dict(rotary_position_emb=True),
    }[name]
    model = pf.PerformerLM(num_tokens=100, max_seq_len=64, dim=32, depth=2, heads=2, dim_head=16, nb_features=16,
                           feature_redraw_interval=2, **options)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 100, (b, s)),), {}))


def _local_attention(name: str) -> Built:
    import torch
    import local_attention as la

    if name == "local-transformer":
        model = la.LocalTransformer(num_tokens=100, dim=32, depth=2, causal=True, local_attn_window_size=8,
                                    max_seq_len=64, heads=2, dim_head=16)
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 100, (b, s)),), {}))
    if name == "local-mha":
        model = la.LocalMHA(dim=32, window_size=8, heads=2, dim_head=16, causal=True, prenorm=True)
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, 32),), {}))
    model = la.LocalAttention(dim=16, window_size=8, causal=name.endswith("causal"), look_backward=1,
                              look_forward=0 if name.endswith("causal") else 1, autopad=True)

    def make(b: int, s: int):
        q, k, v = (torch.randn(b, 2, s, 16) for _ in range(3))
        return (q, k, v), {}
    return Built(model, [16, 24, 32], make)


def _esm(name: str) -> Built:
    import torch
    from esm.data import Alphabet
    from esm.model.esm2 import ESM2

    alphabet = Alphabet.from_architecture("ESM-1b")
    model = ESM2(num_layers=2, embed_dim=32, attention_heads=2, alphabet=alphabet,
                 token_dropout=name != "esm2-no-token-dropout")
    extra = {"repr_layers": [1, 2], "need_head_weights": True, "return_contacts": True} if name == "esm2-heads" else {}

    def make(b: int, s: int):
        tokens = torch.randint(4, 24, (b, s))
        tokens[:, 0] = alphabet.cls_idx
        return (tokens,), dict(extra)
    return Built(model, [16, 24, 32], make)


# ---------------------------------------------------------------- the moe set (2026-12-05)


def _mixture_of_experts(name: str) -> Built:
    import torch
    import mixture_of_experts as me

    dim = 16
    if name == "heirarchical-moe":
        model = me.HeirarchicalMoE(dim=dim, num_experts=(2, 2))
    else:
        options = {"moe": {}, "moe-all": dict(second_policy_train="all", second_policy_eval="all")}[name]
        model = me.MoE(dim=dim, num_experts=4, hidden_dim=32, **options)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, dim),), {}))


def _soft_moe(name: str) -> Built:
    import torch
    import soft_moe_pytorch as sm

    dim = 16
    if name == "dynamic-slots":
        model = sm.DynamicSlotsSoftMoE(dim=dim, num_experts=4)
    else:
        model = sm.SoftMoE(dim=dim, seq_len=64, num_experts=4, geglu=name.endswith("geglu"), is_distributed=False,
                           offload_unused_experts_to_cpu=False)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, dim),), {}))


def _megabyte(name: str) -> Built:
    import torch
    import MEGABYTE_pytorch as mb

    model = mb.MEGABYTE(num_tokens=64, dim=(32, 16), depth=(1, 1), max_seq_len=(8, 4), dim_head=8, heads=2,
                        rel_pos=name.endswith("rel-pos"))
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 64, (b, s)),), {}))


def _ring_attention(name: str) -> Built:
    import torch
    import ring_attention_pytorch as ra

    if name == "ring-attention-gqa":
        model = ra.RingAttention(dim=32, dim_head=8, heads=4, num_grouped_query_heads=2, causal=True, bucket_size=8,
                                 rotary_embed=True)
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randn(b, s, 32),), {}))
    model = ra.RingTransformer(num_tokens=64, dim=32, depth=2, causal=name.endswith("causal"), dim_head=8, heads=2,
                               bucket_size=8)
    return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 64, (b, s)),), {}))


# ---------------------------------------------------------------- the kornia set (2026-12-05)


def _kornia(name: str) -> Built:
    import torch
    import kornia
    import kornia.augmentation as A

    makers = {
        "aug-hflip": lambda: A.RandomHorizontalFlip(p=0.5),
        "aug-affine": lambda: A.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0),
        "aug-colorjitter": lambda: A.ColorJitter(0.2, 0.2, 0.2, 0.1, p=1.0),
        "aug-resizedcrop": lambda: A.RandomResizedCrop(size=(24, 24)),
        "aug-erasing": lambda: A.RandomErasing(p=1.0),
        "aug-perspective": lambda: A.RandomPerspective(0.3, p=1.0),
        "aug-gaussianblur": lambda: A.RandomGaussianBlur((3, 3), (0.1, 2.0), p=1.0),
        "aug-clahe": lambda: A.RandomClahe(p=1.0),
        "aug-sequential": lambda: A.AugmentationSequential(
            A.RandomHorizontalFlip(), A.ColorJitter(0.2, 0.2, 0.2, 0.1, p=1.0), A.RandomAffine(degrees=10.0, p=1.0)
        ),
        "canny": lambda: kornia.filters.Canny(),
        "sobel": lambda: kornia.filters.Sobel(),
        "rgb-to-hsv": lambda: kornia.color.RgbToHsv(),
        "extract-patches": lambda: kornia.contrib.ExtractTensorPatches(window_size=8, stride=8),
        "normalize": lambda: kornia.enhance.Normalize(mean=torch.tensor([0.5, 0.5, 0.5]), std=torch.tensor([0.2, 0.2, 0.2])),
    }
    model = makers[name]()
    return Built(model, [32, 48, 64], lambda b, s: ((torch.rand(b, 3, s, s),), {}))


def _mambapy(name: str) -> Built:
    import torch
    from mambapy.mamba import Mamba, MambaConfig

    model = Mamba(MambaConfig(d_model=16, n_layers=2, d_state=8, pscan=name == "mamba"))
    return Built(model, [8, 16, 32], lambda b, s: ((torch.randn(b, s, 16),), {}))


# ---------------------------------------------------------------- the lucid2 set (2026-12-05)


def _lucid2(package: str, name: str) -> Built:
    import torch

    tokens = lambda b, s: ((torch.randint(0, 64, (b, s)),), {})  # noqa: E731
    features = lambda b, s: ((torch.randn(b, s, 32),), {})  # noqa: E731
    if package == "axial_attention":
        from axial_attention import AxialAttention, AxialImageTransformer

        model = {
            "attention": lambda: AxialAttention(dim=8, dim_index=1, heads=2, num_dimensions=2),
            "image-transformer": lambda: AxialImageTransformer(dim=8, depth=1, heads=2),
            "reversible": lambda: AxialImageTransformer(dim=8, depth=2, heads=2, reversible=True),
        }[name]()
        return Built(model, [8, 12, 16], lambda b, s: ((torch.randn(b, 8, s, s),), {}))
    if package == "reformer_pytorch":
        from reformer_pytorch import ReformerLM

        model = ReformerLM(num_tokens=64, dim=32, depth=1, max_seq_len=64, heads=2, bucket_size=4, n_hashes=2,
                           causal=name == "lm-causal")
        return Built(model, [16, 24, 32], tokens)  # LSH buckets: a multiple of 2 x bucket_size
    if package == "linear_attention_transformer":
        from linear_attention_transformer import LinearAttentionTransformerLM

        extra = {"n_local_attn_heads": 1, "local_attn_window_size": 8} if name == "lm-local" else {}
        model = LinearAttentionTransformerLM(num_tokens=64, dim=32, heads=2, depth=1, max_seq_len=64,
                                             causal=name == "lm-causal", **extra)
        return Built(model, [16, 24, 32], tokens)
    if package == "egnn_pytorch":
        from egnn_pytorch import EGNN, EGNN_Network

        if name == "egnn":
            return Built(EGNN(dim=8), [8, 12, 16], lambda b, s: ((torch.randn(b, s, 8), torch.randn(b, s, 3)), {}))
        model = EGNN_Network(num_tokens=10, dim=8, depth=1, num_nearest_neighbors=4)
        return Built(model, [8, 12, 16], lambda b, s: (
            (torch.randint(0, 10, (b, s)), torch.randn(b, s, 3)), {"mask": torch.ones(b, s, dtype=torch.bool)}))
    if package == "product_key_memory":
        from product_key_memory import PKM

        return Built(PKM(dim=32, heads=2, num_keys=16, topk=4, dim_head=16), [16, 24, 32], features)
    from colt5_attention import ConditionalRoutedAttention, ConditionalRoutedFeedForward, ConditionalRoutedTransformerBlock

    model = {
        "routed-ff": lambda: ConditionalRoutedFeedForward(dim=32, num_heavy_tokens=4),
        "routed-attn": lambda: ConditionalRoutedAttention(
            dim=32, num_heavy_tokens_q=4, num_heavy_tokens_kv=4, light_dim_head=16, light_heads=2,
            light_window_size=8, heavy_dim_head=16, heavy_heads=2),
        "block": lambda: ConditionalRoutedTransformerBlock(
            dim=32, num_heavy_attn_tokens_q=4, num_heavy_attn_tokens_kv=4, num_heavy_ff_tokens=4, light_dim_head=16,
            light_heads=2, light_window_size=8, heavy_dim_head=16, heavy_heads=2),
    }[name]()
    return Built(model, [16, 24, 32], features)


# ---------------------------------------------------------------- the mix set (2026-12-05)


def _mix(package: str, name: str) -> Built:
    import torch

    features = lambda b, s: ((torch.randn(b, s, 32),), {})  # noqa: E731
    if package == "conformer":
        from conformer import Conformer, ConformerBlock

        kwargs = dict(dim=32, dim_head=16, heads=2, ff_mult=2, conv_expansion_factor=2, conv_kernel_size=7)
        model = ConformerBlock(**kwargs) if name == "block" else Conformer(depth=2, **kwargs)
        return Built(model, [16, 24, 32], features)
    if package == "minGRU_pytorch":
        from minGRU_pytorch import minGRU
        from minGRU_pytorch.minLM import minLM

        if name == "mingru":
            return Built(minGRU(32), [16, 24, 32], features)
        model = minLM(num_tokens=64, dim=32, depth=2, use_lstm=name == "minlm-lstm", enable_conv=name == "minlm-conv")
        return Built(model, [16, 24, 32], lambda b, s: ((torch.randint(0, 64, (b, s)),), {}))
    if package == "nystrom_attention":
        from nystrom_attention import NystromAttention, Nystromformer

        if name == "attention":
            model = NystromAttention(dim=32, dim_head=16, heads=2, num_landmarks=8, residual_conv_kernel=7)
        else:
            model = Nystromformer(dim=32, dim_head=16, heads=2, depth=2, num_landmarks=8)
        return Built(model, [16, 24, 32], features)
    if package == "pytorch_tabnet":
        from pytorch_tabnet.tab_network import TabNet

        model = TabNet(input_dim=8, output_dim=2, n_d=8, n_a=8, n_steps=3, mask_type=name,
                       group_attention_matrix=torch.eye(8))
        return Built(model, [8], lambda b, s: ((torch.randn(b * 4, s),), {}))  # rows of 8 features
    from e3nn import nn as e3nn_nn, o3

    if name == "linear":
        return Built(o3.Linear("4x0e + 2x1o", "2x0e + 1x1o"), [4, 6, 8], lambda b, s: ((torch.randn(b, s, 10),), {}))
    if name == "tensor-product":
        tp = o3.FullyConnectedTensorProduct("2x0e + 1x1o", "2x0e + 1x1o", "3x0e")
        return Built(tp, [4, 6, 8], lambda b, s: ((torch.randn(b, s, 5), torch.randn(b, s, 5)), {}))
    gate = e3nn_nn.Gate("2x0e", [torch.relu], "1x0e", [torch.sigmoid], "1x1o")
    return Built(gate, [4, 6, 8], lambda b, s: ((torch.randn(b, s, 6),), {}))


# ---------------------------------------------------------------- the rl set (2026-12-05)


def _sb3(name: str) -> Built:
    import numpy as np
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy
    from stable_baselines3.sac.policies import SACPolicy

    observations = spaces.Box(-1.0, 1.0, (8,), np.float32)
    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    schedule = lambda _: 3e-4  # noqa: E731
    model = {
        "ppo-discrete": lambda: ActorCriticPolicy(observations, spaces.Discrete(4), schedule),
        "ppo-box": lambda: ActorCriticPolicy(observations, box, schedule),
        "dqn": lambda: DQNPolicy(observations, spaces.Discrete(4), schedule),
        "sac": lambda: SACPolicy(observations, box, schedule),
    }[name]()
    return Built(model, [8], lambda b, s: ((torch.randn(b * 4, s),), {}))  # observations of 8 features
