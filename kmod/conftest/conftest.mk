# SPDX-License-Identifier: GPL-2.0
#
# Build-time feature tests, shared by every module here: its Kbuild sets
# obj-m and then includes this file. Each *.c beside it is one test, compiled
# with the kernel's compiler and flags by conftest.sh into pm_conftest.h in
# the module's build directory (never the source tree), which the module
# includes: HAVE_* and PM_* defines instead of kernel version guesses.
# if_changed reruns the tests when the compiler, the flags (which name the
# kernel's include directories), the test list or a test changes.

pm_conftest_dir := $(src)/../conftest
pm_conftest_tests := $(sort $(wildcard $(pm_conftest_dir)/*.c))

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

# Every object of the module includes it.
$(addprefix $(obj)/,$(obj-m)): $(obj)/pm_conftest.h
