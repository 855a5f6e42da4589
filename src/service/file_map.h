/*-------------------------------------------------------------------------
 *
 * file_map.h
 *		Read-only mappings of the Arrow files that CPU engine runs read in
 *		place (file_map.c), safe against the file shrinking under them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SVC_FILE_MAP_H
#define SVC_FILE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct SvcFileMap SvcFileMap;

extern bool svc_file_map_init(void);
extern SvcFileMap *svc_file_map_open(int fd, size_t size);
extern SvcFileMap *svc_file_map_open_kept(int fd, const struct stat *st, const char *path);
extern void svc_file_map_expire(void);
extern const uint8_t *svc_file_map_bytes(const SvcFileMap *m);
extern bool svc_file_map_lost(const SvcFileMap *m);
extern void svc_file_map_close(SvcFileMap *m);

#endif							/* SVC_FILE_MAP_H */
