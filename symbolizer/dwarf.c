// SPDX-License-Identifier: MIT
/* placeholder: being written */
#include <stddef.h>
