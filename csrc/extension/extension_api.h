// The table behind drawbridge/extension.h, which drawbridge._C exports as a capsule.
#pragma once

#include <drawbridge/extension.h>

namespace drawbridge::extension {

const ExtensionApi& extension_api();

}  // namespace drawbridge::extension
