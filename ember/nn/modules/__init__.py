"""``ember.nn.modules`` (mirrors ``torch/nn/modules``)."""
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.container import (Container, ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                                        ParameterList, Sequential)
from ember.nn.modules.linear import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401
from ember.nn.modules.conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                                   ConvTranspose3d)
from ember.nn.modules.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,  # noqa: F401
                                      AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d,
                                      AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d,
                                      MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d,
                                      FractionalMaxPool3d)
from ember.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm  # noqa: F401
from ember.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from ember.nn.modules.normalization import (CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm,  # noqa: F401
                                          RMSNorm)
from ember.nn.modules.dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,  # noqa: F401
                                      FeatureAlphaDropout)
from ember.nn.modules.sparse import Embedding, EmbeddingBag  # noqa: F401
from ember.nn.modules.activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid,  # noqa: F401
                                         Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU,
                                         ReLU6, RReLU, Sigmoid, SiLU, Softmax, Softmax2d, Softmin, Softplus,
                                         Softshrink, Softsign, Tanh, Tanhshrink, Threshold, MultiheadAttention)
from ember.nn.modules.loss import (NLLLoss2d, BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss,  # noqa: F401
                                   LinearCrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                                   L1Loss, MarginRankingLoss, MSELoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                                   MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                                   TripletMarginLoss, TripletMarginWithDistanceLoss, CTCLoss)
from ember.nn.modules.channelshuffle import ChannelShuffle  # noqa: F401
from ember.nn.modules.distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from ember.nn.modules.flatten import Flatten, Unflatten  # noqa: F401
from ember.nn.modules.fold import Fold, Unfold  # noqa: F401
from ember.nn.modules.padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,  # noqa: F401
                                      ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                                      ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
                                      ZeroPad3d)
from ember.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from ember.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from ember.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from ember.nn.modules.transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                                          TransformerEncoder, TransformerEncoderLayer)
from ember.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from ember.nn.modules.lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,  # noqa: F401
                                   LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                                   LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
                                   LazyLinear, LazyModuleMixin)
from ember.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401

# Export the classes only: the submodules (``utils``, ``linear``, ...) must not shadow ``ember.nn.utils``.
__all__ = [_name for _name, _obj in list(globals().items()) if isinstance(_obj, type)]
