# SPDX-License-Identifier: GPL-2.0
#
# Build-time feature tests, shared by every module here: its Kbuild sets
# obj-m (and NAME-y, for a module of several files), names the tests its
# code asks about in pm_conftest (each NAME is kmod/conftest/NAME.c) and
# then includes this file. Those tests only are compiled with the kernel's
# compiler and flags by conftest.sh into pm_conftest.h in the module's
# build directory (never the source tree), which the module includes: PM_*
# defines instead of kernel version guesses.
# A module runs only its own tests: each is a compile against the kernel's
# headers, dear on a small node or under emulation (pinmatrix.ko needs none
# of the DRM tests). tests/unit/conftest_lists_test.sh checks that every PM_*
# name a module's code reads comes from a test its list names.
# if_changed reruns the tests when the compiler, the flags (which name the
# kernel's include directories), the test list or a test changes.

pm_conftest_dir := $(src)/../conftest
pm_conftest_tests := $(foreach t,$(sort $(pm_conftest)),$(pm_conftest_dir)/$(t).c)
ifeq ($(pm_conftest_tests),)
$(error conftest.mk: the module's Kbuild names no feature test in pm_conftest)
endif
pm_conftest_missing := $(filter-out $(wildcard $(pm_conftest_tests)),$(pm_conftest_tests))
ifneq ($(pm_conftest_missing),)
$(error conftest.mk: no such feature test: $(pm_conftest_missing))
endif

# What Kbuild compiles a module's C file with (scripts/Makefile.lib c_flags),
# less the per-file dependency output.
pm_conftest_cflags = $(NOSTDINC_FLAGS) $(LINUXINCLUDE) $(KBUILD_CPPFLAGS) \
		     $(KBUILD_CFLAGS) $(KBUILD_CFLAGS_MODULE) \
		     -DKBUILD_BASENAME='"pm_conftest"' -DKBUILD_MODNAME='"pm_conftest"' \
		     -D__KBUILD_MODNAME=kmod_pm_conftest

quiet_cmd_pm_conftest = CONFTEST $@
      cmd_pm_conftest = $(CONFIG_SHELL) $(pm_conftest_dir)/conftest.sh $@ \
			'$(CC)' '$(pm_conftest_tests)' $(pm_conftest_cflags)

$(obj)/pm_conftest.h: $(pm_conftest_dir)/conftest.sh $(pm_conftest_tests) \
		      $(wildcard $(objtree)/include/generated/autoconf.h) FORCE
	$(call if_changed,pm_conftest)

targets += pm_conftest.h
clean-files += pm_conftest.h
ccflags-y += -I$(obj)

# Every object of the module includes it: a module's own, or those it is
# linked from (NAME-y or NAME-objs, set before this file is included).
pm_conftest_objs := $(obj-m) $(foreach m,$(obj-m),$($(m:.o=-y)) $($(m:.o=-objs)))
$(addprefix $(obj)/,$(pm_conftest_objs)): $(obj)/pm_conftest.h
