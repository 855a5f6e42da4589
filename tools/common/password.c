/*-------------------------------------------------------------------------
 *
 * password.c
 *		The password prompt of the tools: PostgreSQL's own simple_prompt()
 *		(libpgcommon), as psql and pg_dump use it.
 *
 * simple_prompt reads from /dev/tty (or stdin when there is no terminal)
 * and turns echo off before the prompt appears, so an answer typed as soon
 * as the prompt shows is neither echoed nor lost.  This is the only file of
 * the tools that includes PostgreSQL's frontend headers: postgres_fe.h
 * renames printf and friends to libpgport's, which the rest of the tools
 * need not see.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/string.h"

#include "connection.h"

/*
 * Prompts "Password: " and reads the answer without echo; returns it as a
 * new string (malloc'ed; "" when nothing could be read).  simple_prompt
 * ends the program when memory runs out.
 */
char *
prompt_password(void)
{
	return simple_prompt("Password: ", false);
}
