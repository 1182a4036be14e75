// The `device` setting of every app and benchmark: "cpu", "cuda" or "cuda:N" into a Device,
// checked before any work, so that asking for a GPU that is not there (or for CUDA in a CPU-only
// build) stops with one error line that says why.
//
// Deliberately does not: pick a device by itself, or fall back to the CPU when a GPU was asked for.
#pragma once

#include <string>

#include "tensor/device.h"

namespace posgrad::apps {

// Device::parse's error for a malformed name; require_device's for one that cannot be used.
Device usable_device(const std::string& name);

}  // namespace posgrad::apps
