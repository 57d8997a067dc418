// SPDX-License-Identifier: GPL-2.0
/*
 * A second nbcon console, on the rig's second instrumented UART (at RIG_UART2_BASE,
 * with its own register log and marker port): a console that the 8250
 * driver cannot give, since it has one struct console for all its ports.
 *
 * It writes the way the 8250's nbcon console writes ttyS0: byte by byte,
 * each byte with the wait for THRE before it in an unsafe region, so a
 * context that lost the console never touches the port again, and a
 * higher priority context gets it between two bytes. write_atomic() and
 * write_thread() are the same code; the device lock serializes the printer
 * thread with nothing else, as this port has no tty. IER stays 0: nothing
 * here uses the UART's interrupts.
 *
 * Registered early (it prints along from then on) or late with
 * CON_PRINTBUFFER (it gets the history still in the ringbuffer).
 */
#include <linux/console.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/printk.h>
#include <linux/serial_reg.h>
#include <linux/spinlock.h>

#include "protocol.h"
#include "rigprintk.h"

#define UART2_DIVISOR		1	/* 115200 baud from the 1.8432 MHz clock */
/* The 8250's bound for one byte to leave (wait_for_xmitr): 10 ms. */
#define UART2_THRE_WAIT_US	10000

static DEFINE_SPINLOCK(uart2_lock);
static bool uart2_registered;
/* The last byte written ended a line; only the console's owner touches it. */
static bool uart2_line_ended = true;

static void uart2_wait_thre(void)
{
	unsigned int us;

	for (us = 0; us < UART2_THRE_WAIT_US; us++) {
		if (inb(RIG_UART2_BASE + UART_LSR) & UART_LSR_THRE)
			return;
		udelay(1);
	}
}

/* One byte, with the wait before it: the caller is in an unsafe region. */
static void uart2_put(char c)
{
	uart2_wait_thre();
	outb(c, RIG_UART2_BASE + UART_TX);
}

static void uart2_write(struct console *con, struct nbcon_write_context *wctxt)
{
	const char *s, *end;

	if (!nbcon_enter_unsafe(wctxt))
		return;
	s = READ_ONCE(wctxt->outbuf);
	end = s + READ_ONCE(wctxt->len);

	/* A write that was taken over left its line unfinished. */
	if (!uart2_line_ended) {
		uart2_put('\r');
		uart2_put('\n');
		uart2_line_ended = true;
	}
	for (; s < end; s++) {
		if (*s == '\n')
			uart2_put('\r');
		uart2_put(*s);
		uart2_line_ended = (*s == '\n');
		/* Lost between two bytes: the port is no longer ours. */
		if (!nbcon_exit_unsafe(wctxt) || !nbcon_enter_unsafe(wctxt))
			return;
	}
	nbcon_exit_unsafe(wctxt);
}

static void uart2_device_lock(struct console *con, unsigned long *flags)
{
	spin_lock_irqsave(&uart2_lock, *flags);
}

static void uart2_device_unlock(struct console *con, unsigned long flags)
{
	spin_unlock_irqrestore(&uart2_lock, flags);
}

static struct console uart2_console = {
	.name		= "riguart",
	.write_atomic	= uart2_write,
	.write_thread	= uart2_write,
	.device_lock	= uart2_device_lock,
	.device_unlock	= uart2_device_unlock,
	.flags		= CON_NBCON | CON_ENABLED,
	.index		= 2,
};

/* 8N1 at 115200, FIFOs on, interrupts off; false if no UART answers. */
static bool uart2_setup(void)
{
	outb(0x5a, RIG_UART2_BASE + UART_SCR);
	if (inb(RIG_UART2_BASE + UART_SCR) != 0x5a)
		return false;
	outb(0, RIG_UART2_BASE + UART_IER);
	outb(UART_LCR_DLAB | UART_LCR_WLEN8, RIG_UART2_BASE + UART_LCR);
	outb(UART2_DIVISOR & 0xff, RIG_UART2_BASE + UART_DLL);
	outb(UART2_DIVISOR >> 8, RIG_UART2_BASE + UART_DLM);
	outb(UART_LCR_WLEN8, RIG_UART2_BASE + UART_LCR);
	outb(UART_FCR_ENABLE_FIFO | UART_FCR_CLEAR_RCVR | UART_FCR_CLEAR_XMIT,
	     RIG_UART2_BASE + UART_FCR);
	outb(UART_MCR_DTR | UART_MCR_RTS, RIG_UART2_BASE + UART_MCR);
	return true;
}

/* history: CON_PRINTBUFFER, the console starts at the oldest record kept. */
int uart2_console_register(bool history)
{
	if (uart2_registered)
		return 0;
	if (!uart2_setup()) {
		pr_err("rigprintk: no UART at %#x for the second console: the machine needs the rig's second console UART\n",
		       RIG_UART2_BASE);
		return -ENODEV;
	}
	if (history)
		uart2_console.flags |= CON_PRINTBUFFER;
	register_console(&uart2_console);
	uart2_registered = true;
	return 0;
}

void uart2_console_unregister(void)
{
	if (uart2_registered)
		unregister_console(&uart2_console);
	uart2_registered = false;
}

/* Markers go into this UART's register log too once its console exists. */
void uart2_console_mark(u32 value)
{
	if (READ_ONCE(uart2_registered))
		outl(value, RIG_UART2_MARKER_PORT);
}
