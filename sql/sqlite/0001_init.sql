-- Every resource of the spec; the same tables, columns and indexes as sql/mysql/0001_init.sql.
-- Timestamps are ISO-8601 UTC text (sortable); booleans are 0/1.

CREATE TABLE admin_users (
  id TEXT NOT NULL PRIMARY KEY,
  name TEXT NOT NULL,
  phone TEXT NOT NULL,
  email TEXT COLLATE NOCASE NULL,
  role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('superadmin', 'admin')),
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  password_hash TEXT NULL,
  failed_login_count INTEGER NOT NULL DEFAULT 0,
  locked_until TEXT NULL,
  last_login_at TEXT NULL,
  created_by TEXT NULL REFERENCES admin_users (id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX admin_users_phone_uq ON admin_users (phone);
CREATE UNIQUE INDEX admin_users_email_uq ON admin_users (email);
CREATE INDEX admin_users_created_by_idx ON admin_users (created_by);
CREATE INDEX admin_users_created_at_idx ON admin_users (created_at);

CREATE TABLE refresh_tokens (
  id TEXT NOT NULL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES admin_users (id),
  family_id TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT NULL,
  replaced_by TEXT NULL,
  user_agent TEXT NULL,
  ip_hash TEXT NULL,
  created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX refresh_tokens_token_hash_uq ON refresh_tokens (token_hash);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);

CREATE TABLE auth_tokens (
  id TEXT NOT NULL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES admin_users (id),
  purpose TEXT NOT NULL CHECK (purpose IN ('reset', 'invite')),
  token_hash TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT NULL,
  created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX auth_tokens_token_hash_uq ON auth_tokens (token_hash);
CREATE INDEX auth_tokens_user_idx ON auth_tokens (user_id);

CREATE TABLE media_categories (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  slug TEXT NOT NULL,
  label TEXT NOT NULL,
  position INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX media_categories_slug_uq ON media_categories (slug);

INSERT OR IGNORE INTO media_categories (slug, label, position) VALUES
  ('office', 'Office', 1),
  ('function-hall', 'Function hall', 2),
  ('sharing-corner', 'Sharing corner', 3),
  ('event-space', 'Event space', 4),
  ('meeting-room', 'Meeting room', 5);

CREATE TABLE media_images (
  id TEXT NOT NULL PRIMARY KEY,
  page TEXT NOT NULL CHECK (page IN ('genesis', 'hive')),
  category_id INTEGER NULL REFERENCES media_categories (id),
  alt TEXT NOT NULL,
  caption TEXT NULL,
  position INTEGER NOT NULL,
  is_visible INTEGER NOT NULL DEFAULT 1,
  status TEXT NOT NULL DEFAULT 'processing' CHECK (status IN ('processing', 'ready', 'failed')),
  width INTEGER NULL,
  height INTEGER NULL,
  content_hash TEXT NULL,
  original_name TEXT NOT NULL,
  original_bytes INTEGER NOT NULL,
  created_by TEXT NULL REFERENCES admin_users (id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  deleted_at TEXT NULL
);
CREATE INDEX media_images_page_position_idx ON media_images (page, position);
CREATE INDEX media_images_category_idx ON media_images (category_id);
CREATE INDEX media_images_content_hash_idx ON media_images (content_hash);
CREATE INDEX media_images_status_idx ON media_images (status);
CREATE INDEX media_images_deleted_at_idx ON media_images (deleted_at);
CREATE INDEX media_images_created_by_idx ON media_images (created_by);

CREATE TABLE media_variants (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  image_id TEXT NOT NULL REFERENCES media_images (id) ON DELETE CASCADE,
  format TEXT NOT NULL CHECK (format IN ('avif', 'webp', 'jpeg')),
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  path TEXT NOT NULL,
  is_primary INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX media_variants_image_format_width_uq ON media_variants (image_id, format, width);

CREATE TABLE enquiries (
  id TEXT NOT NULL PRIMARY KEY,
  name TEXT NOT NULL,
  phone TEXT NOT NULL,
  email TEXT NOT NULL,
  message TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'contact' CHECK (source IN ('contact', 'genesis', 'hive', 'home')),
  status TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'read', 'replied', 'spam', 'archived')),
  spam_score INTEGER NOT NULL DEFAULT 0 CHECK (spam_score >= 0),
  spam_reason TEXT NULL,
  user_agent TEXT NULL,
  referer TEXT NULL,
  ip_hash TEXT NULL,
  notified_at TEXT NULL,
  notify_attempts INTEGER NOT NULL DEFAULT 0,
  notify_error TEXT NULL,
  notify_after TEXT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX enquiries_created_at_idx ON enquiries (created_at);
CREATE INDEX enquiries_status_created_idx ON enquiries (status, created_at);
CREATE INDEX enquiries_source_created_idx ON enquiries (source, created_at);
CREATE INDEX enquiries_outbox_idx ON enquiries (notify_after);

CREATE TABLE enquiry_replies (
  id TEXT NOT NULL PRIMARY KEY,
  enquiry_id TEXT NOT NULL REFERENCES enquiries (id),
  author_id TEXT NOT NULL REFERENCES admin_users (id),
  body TEXT NOT NULL,
  delivery_status TEXT NOT NULL DEFAULT 'pending' CHECK (delivery_status IN ('pending', 'sent', 'failed')),
  delivery_error TEXT NULL,
  sent_at TEXT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX enquiry_replies_enquiry_idx ON enquiry_replies (enquiry_id, created_at);
CREATE INDEX enquiry_replies_author_idx ON enquiry_replies (author_id);
