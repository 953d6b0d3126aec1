// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/kernel.h"
#include "lowprof/log.h"

int lp_check_kernel_btf(void)
{
	int err;

	if (!access(LP_KERNEL_BTF, R_OK))
		return 0;
	err = errno;
	lp_err("this kernel has no BTF (%s: %s): lowprof needs a kernel built with "
	       "CONFIG_DEBUG_INFO_BTF=y (the default of Debian 11 and later, Ubuntu 20.10 and "
	       "later, RHEL 8.2 and later, Amazon Linux 2 5.10 and 2023); install such a kernel "
	       "or enable the option and rebuild",
	       LP_KERNEL_BTF, strerror(err));
	return -ENOENT;
}
