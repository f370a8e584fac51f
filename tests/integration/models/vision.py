"""torchvision models with random weights (weights=None: nothing is downloaded); the tests give the input shapes."""
import torchvision


def resnet18():
    return torchvision.models.resnet18(weights=None)


def detector():
    # eval mode: the detector returns boxes after torchvision::nms, whose count depends on the data; images are
    # resized to 160 pixels and 100 proposals kept to keep the CPU run short
    return torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, min_size=160, max_size=160, rpn_pre_nms_top_n_test=100,
        rpn_post_nms_top_n_test=100)


def vit():
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                hidden_dim=32, mlp_dim=64, num_classes=10)

