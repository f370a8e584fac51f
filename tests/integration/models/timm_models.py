"""timm models with random weights (pretrained=False: nothing is downloaded), in tiny configurations."""
import timm
import torch


def vit():
    # timm's ViT keeps nn.Identity where a layer is switched off (norm_pre, layer scale, drop path, the pre-logits)
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2,
                             embed_dim=32, num_heads=2, num_classes=10)


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
