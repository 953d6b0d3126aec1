// SPDX-License-Identifier: MIT
/*
 * Demangling of C++ (Itanium ABI) and Rust (legacy and v0) names with
 * libiberty's cplus_demangle (see debuginfo.h for the contract).
 *
 * DMGL_AUTO tries Rust first, then C++, and fails for anything else, which
 * is what makes plain C names come back as NULL. DMGL_AUTO must not be
 * combined with DMGL_RUST: cplus_demangle then stops after the Rust attempt
 * and C++ names fail. DMGL_PARAMS is left out on purpose: profiles show
 * "ns::Type<long>::method", not its parameter list.
 *
 * Names come from untrusted files. libiberty bounds its recursion (the
 * limit is on unless DMGL_NO_RECURSE_LIMIT is passed, which we never do),
 * but the C++ demangler still puts arrays sized by the input's length on
 * the stack (about 72 bytes per input byte), so the input is bounded too:
 * no real symbol needs more than SYMB_DEMANGLE_MAX bytes to be useful, and
 * a longer one is returned undemangled by the caller.
 */
#include <string.h>

#include <demangle.h>

#include "debuginfo.h"

/* Longest mangled name handed to libiberty (under 300 KiB of its stack). */
#define SYMB_DEMANGLE_MAX 4096

char *symb_demangle(const char *name)
{
	size_t len;

	if (!name)
		return NULL;
	/*
	 * "_Z" (C++, Rust legacy), "_R" (Rust v0), "_GLOBAL_" (C++ static
	 * constructors): everything else is not mangled, no need to ask.
	 */
	if (name[0] != '_' ||
	    (name[1] != 'Z' && name[1] != 'R' && strncmp(name, "_GLOBAL_", 8) != 0))
		return NULL;
	len = strnlen(name, SYMB_DEMANGLE_MAX + 1);
	if (len > SYMB_DEMANGLE_MAX)
		return NULL;
	return cplus_demangle(name, DMGL_ANSI | DMGL_AUTO);
}
