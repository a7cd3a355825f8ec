// SPDX-License-Identifier: GPL-2.0
// gtest main for tests that boot guests: when every test skipped (no root,
// no QEMU) and none failed, exit 77 so that ctest reports SKIP, not a pass.

#include <gtest/gtest.h>

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	const int ret = RUN_ALL_TESTS();
	const auto &u = *::testing::UnitTest::GetInstance();
	if (ret == 0 && u.successful_test_count() == 0 && u.skipped_test_count() > 0)
		return 77;
	return ret;
}
