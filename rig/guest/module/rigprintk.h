/* SPDX-License-Identifier: GPL-2.0 */
/* What the parts of rigprintk (main.c, uart2_console.c) share. */
#ifndef RIGPRINTK_H
#define RIGPRINTK_H

#include <linux/types.h>

int uart2_console_register(bool history);
void uart2_console_unregister(void);
void uart2_console_mark(u32 value);

#endif
