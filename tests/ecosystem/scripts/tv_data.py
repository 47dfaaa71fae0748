"""torchvision's data side: transforms (v2 and v1) on tensors, PIL images and boxes, seeded random transforms
drawing from torch's generator; ImageFolder and FakeData through DataLoader; make_grid, draw_bounding_boxes,
draw_segmentation_masks, save_image."""
import os

import _harness
from _harness import record

import numpy as np
import torch
from PIL import Image
from torchvision import datasets, tv_tensors, utils
from torchvision.transforms import v2
import torchvision.transforms as T
import torchvision.transforms.functional as TF

rng = np.random.default_rng(0)
img_u8 = torch.tensor(rng.integers(0, 256, (3, 40, 50)), dtype=torch.uint8)
img_f = img_u8.float() / 255
pil = Image.fromarray(img_u8.permute(1, 2, 0).numpy())

# deterministic functional transforms
record("resize_bilinear", TF.resize(img_f, [23, 31], antialias=True))
record("resize_nearest", TF.resize(img_u8, [23, 31], interpolation=T.InterpolationMode.NEAREST))
record("resize_u8_aa", TF.resize(img_u8, [20, 25], antialias=True))
record("center_crop", TF.center_crop(img_f, [30, 30]))
record("pad", TF.pad(img_f, [2, 3, 4, 5], padding_mode="reflect"))
record("normalize", TF.normalize(img_f, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4]))
record("rotate", TF.rotate(img_f, 30.0))
record("affine", TF.affine(img_f, angle=10.0, translate=[3, -2], scale=1.1, shear=[5.0, 2.0]))
record("perspective", TF.perspective(img_f, [[0, 0], [49, 0], [49, 39], [0, 39]],
                                     [[2, 3], [45, 1], [47, 37], [1, 35]]))
record("gaussian_blur", TF.gaussian_blur(img_f, [5, 5], [1.5, 1.5]))
record("adjust", (TF.adjust_brightness(img_f, 1.3), TF.adjust_contrast(img_f, 0.7), TF.adjust_saturation(img_f, 1.4),
                  TF.adjust_hue(img_f, 0.1), TF.adjust_gamma(img_f, 0.8), TF.rgb_to_grayscale(img_f),
                  TF.posterize(img_u8, 3), TF.solarize(img_f, 0.6), TF.autocontrast(img_f), TF.equalize(img_u8),
                  TF.adjust_sharpness(img_f, 2.0), TF.invert(img_u8)))
record("pil_to_tensor", (TF.to_tensor(pil), TF.pil_to_tensor(pil)))
record("pil_resize", TF.pil_to_tensor(TF.resize(pil, [21, 27])))
record("to_pil_back", TF.pil_to_tensor(TF.to_pil_image(img_f)))

# seeded random pipelines: the parameters come from torch's generator
pipeline = v2.Compose([v2.RandomResizedCrop(32, antialias=True), v2.RandomHorizontalFlip(), v2.ColorJitter(0.4, 0.4,
                                                                                                            0.4, 0.1),
                       v2.RandomRotation(15), v2.ToDtype(torch.float32, scale=True),
                       v2.Normalize([0.5] * 3, [0.25] * 3)])
torch.manual_seed(3)
record("v2_pipeline", [pipeline(img_u8) for _ in range(3)])
torch.manual_seed(4)
old = T.Compose([T.RandomCrop(30, padding=2), T.RandomVerticalFlip(), T.RandomGrayscale(0.5), T.ToTensor(),
                 T.RandomErasing(p=1.0)])
record("v1_pipeline_pil", [old(pil) for _ in range(3)])
torch.manual_seed(5)
record("autoaugment", [v2.AutoAugment()(img_u8), v2.RandAugment()(img_u8), v2.TrivialAugmentWide()(img_u8)])
# AugMix mixes with Dirichlet weights and truncates to uint8: a last-bit difference in a gamma draw moves a pixel by 1
record("augmix", v2.AugMix()(img_u8).float())

# boxes and masks move with the image
boxes = tv_tensors.BoundingBoxes(torch.tensor([[5.0, 6.0, 20.0, 30.0], [10.0, 2.0, 45.0, 25.0]]), format="XYXY",
                                 canvas_size=(40, 50))
mask = tv_tensors.Mask(torch.zeros(40, 50, dtype=torch.uint8))
mask[10:20, 5:25] = 1
torch.manual_seed(6)
det = v2.Compose([v2.RandomIoUCrop(), v2.RandomHorizontalFlip(1.0), v2.Resize((24, 30), antialias=True),
                  v2.SanitizeBoundingBoxes(labels_getter=None)])
out = det(tv_tensors.Image(img_u8), boxes, mask)
record("detection_pipeline", [out[0], out[1], out[2]])
record("box_convert", v2.ConvertBoundingBoxFormat("CXCYWH")(boxes))

# datasets through the DataLoader
root = os.path.join(_harness.OUT, f"images_{_harness.SIDE}")
for cls in ("cat", "dog"):
    os.makedirs(os.path.join(root, cls), exist_ok=True)
    for i in range(3):
        a = np.random.default_rng({"cat": 10, "dog": 20}[cls] + i).integers(0, 256, (12, 10, 3)).astype(np.uint8)
        Image.fromarray(a).save(os.path.join(root, cls, f"{i}.png"))
folder = datasets.ImageFolder(root, transform=T.Compose([T.Resize((8, 8)), T.ToTensor()]))
record("imagefolder_classes", np.array(folder.class_to_idx["dog"]))
batches = list(torch.utils.data.DataLoader(folder, batch_size=4, shuffle=False, num_workers=2))
record("imagefolder_batches", [b[0] for b in batches] + [b[1] for b in batches])
fake = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4, transform=T.ToTensor(), random_offset=7)
record("fakedata", [fake[i][0] for i in range(5)] + [torch.tensor([fake[i][1] for i in range(5)])])

# utilities
grid = utils.make_grid([img_f, img_f.flip(-1), 1 - img_f], nrow=2, padding=3, normalize=True)
record("make_grid", grid)
drawn = utils.draw_bounding_boxes(img_u8, boxes, colors=["red", "#00ff00"], width=2, fill=True)
record("draw_bounding_boxes", drawn)
record("draw_masks", utils.draw_segmentation_masks(img_u8, mask.bool(), alpha=0.5, colors="blue"))
png = os.path.join(_harness.OUT, f"grid_{_harness.SIDE}.png")
utils.save_image(grid, png)
record("save_image", np.asarray(Image.open(png)))
print("ok")
