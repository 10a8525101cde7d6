/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <flowsdn/policy.h>

#include "helpers.h"

Test(policy, placeholder_builds)
{
	cr_assert(flowsdn_policy_cause_reason(FLOWSDN_POLICY_CAUSE_INVALID)[0] == 'F');
}
