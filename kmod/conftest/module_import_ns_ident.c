// SPDX-License-Identifier: GPL-2.0
/* PM_MODULE_IMPORT_NS_IDENT: MODULE_IMPORT_NS() takes an identifier (up to 6.12) */
/* From 6.13 it takes a string literal, and an identifier does not compile. */
#include <linux/module.h>

MODULE_IMPORT_NS(PM_CONFTEST_NS);
