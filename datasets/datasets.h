// The datasets layer in one include: Dataset/DataLoader, the file formats (IDX/MNIST, CIFAR-10
// binary, char-level text), the count24 task, the APE transduction tasks (sequences and trees,
// datasets/transduction/), splits, image augmentation, the data folder lookup and file checksums.
// This file deliberately declares nothing itself.
#pragma once

#include "datasets/augmented_images.h"
#include "datasets/autoaugment.h"
#include "datasets/byte_image.h"
#include "datasets/char_corpus.h"
#include "datasets/char_vocab.h"
#include "datasets/checksum.h"
#include "datasets/cifar10.h"
#include "datasets/count24.h"
#include "datasets/data_dir.h"
#include "datasets/data_loader.h"
#include "datasets/dataset.h"
#include "datasets/file_bytes.h"
#include "datasets/idx.h"
#include "datasets/image_sequence.h"
#include "datasets/mnist.h"
#include "datasets/pixels.h"
#include "datasets/seeding.h"
#include "datasets/split.h"
#include "datasets/transduction/binary_tree.h"
#include "datasets/transduction/sequence_tasks.h"
#include "datasets/transduction/transduction_batch.h"
#include "datasets/transduction/transduction_metrics.h"
#include "datasets/transduction/tree_operations.h"
#include "datasets/transduction/tree_tasks.h"
