// The device setting (see device_setting.h).
#include "apps/common/device_setting.h"

namespace posgrad::apps {

Device usable_device(const std::string& name) {
  const Device device = Device::parse(name);
  if (!device.is_cpu()) require_device(device);
  return device;
}

}  // namespace posgrad::apps
