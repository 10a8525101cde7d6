/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Error strings of the rendering block (4400). */
#include "config.h"

#include <flash/render.h>

#include "internal.h"

const char *flash__render_strerror(int code)
{
	switch (code) {
	case FLASH_E_RENDER_CONFIG: return "operator configuration refused";
	case FLASH_E_RENDER_PREVIOUS: return "previous public port assignment refused";
	case FLASH_E_RENDER_PORTS_EXHAUSTED: return "no free public port in the configured range";
	case FLASH_E_RENDER_DISK: return "the image fills or exceeds the workload's disk budget";
	case FLASH_E_RENDER_NAME: return "name or identifier not usable in Kubernetes";
	case FLASH_E_RENDER_BAD_DOCUMENT: return "schema document or object is not usable";
	case FLASH_E_RENDER_NO_SCHEMA: return "no schema for the object's apiVersion and kind";
	case FLASH_E_RENDER_INVALID: return "object does not match its schema";
	default: return NULL;
	}
}
