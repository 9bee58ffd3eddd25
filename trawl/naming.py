"""What an export's names are made of: the template's fields, the default template, the link
modes. Plain data without imports, so that the command's parser (``trawl export --help``) reads
it without loading the exporter."""

DEFAULT_TEMPLATE = "{platform}/{uploader}/{title} [{id}].{ext}"
LINK_MODES: tuple[str, ...] = ("hardlink", "copy", "symlink")

FIELDS: dict[str, str] = {
    "platform": "the platform's name (generic for a site no platform claims)",
    "id": "the platform's id (the canonical key without its platform prefix); for a page or file no platform claims, the URL's file name without extension",
    "key": "the canonical key, <platform>:<id>",
    "title": "the title",
    "uploader": "the uploader's name; the page's host when the platform names none",
    "uploader_id": "the uploader's id, when the platform gives it",
    "upload_date": "YYYYMMDD",
    "part": "the part number of a multi-part video",
    "duration": "the length in whole seconds",
    "kind": "the asset's kind: video, audio, image, thumbnail",
    "asset": "the asset's name within its item: video, audio, image-2, thumbnail",
    "ext": "the extension of the asset's sniffed type: mp4, m4a, flv, ts, jpg, ...",
    "sha256": "the first 16 hex digits of the file's sha256",
}
