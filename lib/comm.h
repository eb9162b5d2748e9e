/* wafer — SPDX-License-Identifier: MIT
 *
 * comm.h (core): what the client needs of communicators (comm.c). A
 * communicator belongs to its client and must be closed before it;
 * wafer_client_close closes those still open, with a warning each. */
#ifndef WAFER_CORE_COMM_H
#define WAFER_CORE_COMM_H

#include <wafer/wafer.h>

/* Closes the communicators of |client| still open (logs each). Called by
 * wafer_client_close before its final sync. */
void wafer__comm_client_closing(wafer_client *client);

#endif
