/* wafer — SPDX-License-Identifier: MIT
 *
 * list.h: putting a node first on an intrusive doubly linked list and
 * taking it out again, the one way every list of the core does it. */
#ifndef WAFER_LIST_H
#define WAFER_LIST_H

/* Puts |node| first on the list whose first node is |head| (an lvalue),
 * through the node's |prev| and |next| members. */
#define WAFER__LIST_PUSH(head, node, prev, next)                               \
	do {                                                                   \
		(node)->prev = NULL;                                           \
		(node)->next = (head);                                         \
		if (head)                                                      \
			(head)->prev = (node);                                 \
		(head) = (node);                                               \
	} while (0)

/* Takes |node| out of the list whose first node is |head| (an lvalue),
 * through the node's |prev| and |next| members; leaves the node's own
 * links as they were. */
#define WAFER__LIST_UNLINK(head, node, prev, next)                             \
	do {                                                                   \
		if ((node)->prev)                                              \
			(node)->prev->next = (node)->next;                     \
		else                                                           \
			(head) = (node)->next;                                 \
		if ((node)->next)                                              \
			(node)->next->prev = (node)->prev;                     \
	} while (0)

#endif
