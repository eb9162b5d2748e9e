/* wafer — SPDX-License-Identifier: MIT
 *
 * comm.h (core): what the client needs of communicators (comm.c). A
 * communicator belongs to its client and must be closed before it;
 * wafer_client_close closes those still open, with a warning each. */
#ifndef WAFER_CORE_COMM_H
#define WAFER_CORE_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

/* Closes the communicators of |client| still open (logs each). Called by
 * wafer_client_close before its final sync. */
void wafer__comm_client_closing(wafer_client *client);

/* [comm] timeout of |client|'s runtime (wafer.conf(5)) in milliseconds,
 * 0 for ever; WAFER_ERROR_CONFIG naming the origin of a bad value. */
wafer_status wafer__comm_timeout(wafer_client *client, uint64_t *out_ms);

/* Whether the communicator |token| names is still open: a graph's
 * recorded collective checks it before each replay (lib/graph.c). */
bool wafer__comm_is_open(const wafer_comm *token);

#endif
