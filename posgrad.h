// posgrad.h: the one header a user includes to get the whole framework (tensors, autograd, nn,
// attention, datasets). Each include below is also usable on its own.
#pragma once

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "autograd/variable.h"
#include "attention/posattn_classifier.h"
#include "attention/registry.h"
#include "attention/transformer_classifier.h"
#include "datasets/datasets.h"
#include "nn/nn.h"
#include "tensor/autocast.h"
#include "tensor/ops.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
