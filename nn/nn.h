// nn.h: every nn/ header in one include (modules, layers, init, losses, optimizers, schedules,
// gradient clipping, safetensors and checkpoints). Each header is also usable on its own.
#pragma once

// Modules and layers.
#include "nn/activations.h"
#include "nn/conv2d.h"
#include "nn/drop_path.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/matrix_exp.h"
#include "nn/losses.h"
#include "nn/mlp.h"
#include "nn/module.h"
#include "nn/orthogonal.h"
#include "nn/siren.h"
#include "nn/sequence_pooling.h"
#include "nn/sequential.h"

// Training: optimizers, schedules, clipping, accumulation.
#include "nn/adagrad.h"
#include "nn/adam.h"
#include "nn/clip_grad.h"
#include "nn/grad_accumulation.h"
#include "nn/lr_schedule.h"
#include "nn/optimizer.h"
#include "nn/sgd.h"

// Files: safetensors, atomic writes, checkpoints.
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
