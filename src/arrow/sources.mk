# The source files of the Arrow library (src/arrow), one explicit list that
# the extension's Makefile, tools/Makefile and test/c/Makefile include.
# A new file of the library is added here.
ARROW_SOURCES = \
	arrow_util.c \
	arrow_types.c \
	arrow_io.c \
	fb_read.c \
	arrow_read.c \
	arrow_read_schema.c \
	arrow_read_image.c \
	arrow_image_file.c \
	arrow_load.c \
	arrow_load_dict.c \
	arrow_codec.c \
	arrow_views.c \
	arrow_json.c \
	fb_build.c \
	arrow_build.c \
	arrow_write.c
