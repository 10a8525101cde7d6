/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host firewall's words (flowsdn-agent(8) "HOST FIREWALL",
 * flowsdn-agent.conf(5) "host-firewall"): its modes, for the
 * configuration and the API (agent_policy_hostfw_body_parse()).  The
 * state itself is the policy's (policy.h,
 * agent_policy_hostfw_*()): host rules are NetworkPolicy objects of the
 * reserved namespace AGENT_HOSTFW_NAMESPACE, compiled for the reserved
 * endpoint FLOWSDN_HOSTFW_EP_ID.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_HOSTFW_H
#define FLOWSDN_AGENT_HOSTFW_H

/* The namespace of the host policies (no endpoint may join it). */
#define AGENT_HOSTFW_NAMESPACE "flowsdn-host"

/* "off", "audit", "enforce" (enum flowsdn_hostfw_mode order), NULL-ended. */
extern const char *const agent_hostfw_mode_words[];
/* What a configuration or a body says when the word is none of them. */
#define AGENT_HOSTFW_MODE_EXPECTED "\"off\", \"audit\" or \"enforce\""

/* The word of @mode ("?" beyond the known ones). */
const char *agent_hostfw_mode_name(unsigned int mode);
/* The mode of @word: 0, or -EINVAL. */
int agent_hostfw_mode_parse(const char *word, unsigned int *ret);

#endif
