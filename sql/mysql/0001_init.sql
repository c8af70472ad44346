-- Every resource of the spec. MySQL commits DDL implicitly, so this file is written to be re-runnable
-- (IF NOT EXISTS, INSERT IGNORE): a run cut short converges on the next one.

CREATE TABLE IF NOT EXISTS admin_users (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(120) NOT NULL,
  phone VARCHAR(20) NOT NULL,
  email VARCHAR(254) NULL,
  role VARCHAR(16) NOT NULL DEFAULT 'admin',
  status VARCHAR(16) NOT NULL DEFAULT 'active',
  password_hash VARCHAR(255) NULL,
  failed_login_count INT UNSIGNED NOT NULL DEFAULT 0,
  locked_until DATETIME(3) NULL,
  last_login_at DATETIME(3) NULL,
  created_by CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY admin_users_phone_uq (phone),
  UNIQUE KEY admin_users_email_uq (email),
  KEY admin_users_created_by_idx (created_by),
  KEY admin_users_created_at_idx (created_at),
  CONSTRAINT admin_users_created_by_fk FOREIGN KEY (created_by) REFERENCES admin_users (id),
  CONSTRAINT admin_users_role_ck CHECK (role IN ('superadmin', 'admin')),
  CONSTRAINT admin_users_status_ck CHECK (status IN ('active', 'inactive'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS refresh_tokens (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  user_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  family_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  token_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  expires_at DATETIME(3) NOT NULL,
  revoked_at DATETIME(3) NULL,
  replaced_by CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NULL,
  user_agent VARCHAR(255) NULL,
  ip_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  created_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY refresh_tokens_token_hash_uq (token_hash),
  KEY refresh_tokens_family_idx (family_id),
  KEY refresh_tokens_user_idx (user_id),
  CONSTRAINT refresh_tokens_user_fk FOREIGN KEY (user_id) REFERENCES admin_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS auth_tokens (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  user_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  purpose VARCHAR(16) NOT NULL,
  token_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  expires_at DATETIME(3) NOT NULL,
  used_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY auth_tokens_token_hash_uq (token_hash),
  KEY auth_tokens_user_idx (user_id),
  CONSTRAINT auth_tokens_user_fk FOREIGN KEY (user_id) REFERENCES admin_users (id),
  CONSTRAINT auth_tokens_purpose_ck CHECK (purpose IN ('reset', 'invite'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS media_categories (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  slug VARCHAR(64) NOT NULL,
  label VARCHAR(120) NOT NULL,
  position INT NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY media_categories_slug_uq (slug)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

INSERT IGNORE INTO media_categories (slug, label, position) VALUES
  ('office', 'Office', 1),
  ('function-hall', 'Function hall', 2),
  ('sharing-corner', 'Sharing corner', 3),
  ('event-space', 'Event space', 4),
  ('meeting-room', 'Meeting room', 5);

CREATE TABLE IF NOT EXISTS media_images (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  page VARCHAR(16) NOT NULL,
  category_id INT UNSIGNED NULL,
  alt VARCHAR(255) NOT NULL,
  caption VARCHAR(500) NULL,
  position INT NOT NULL,
  is_visible TINYINT(1) NOT NULL DEFAULT 1,
  status VARCHAR(16) NOT NULL DEFAULT 'processing',
  width INT UNSIGNED NULL,
  height INT UNSIGNED NULL,
  content_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  original_name VARCHAR(255) NOT NULL,
  original_bytes BIGINT UNSIGNED NOT NULL,
  created_by CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  deleted_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  KEY media_images_page_position_idx (page, position),
  KEY media_images_category_idx (category_id),
  KEY media_images_content_hash_idx (content_hash),
  KEY media_images_status_idx (status),
  KEY media_images_deleted_at_idx (deleted_at),
  KEY media_images_created_by_idx (created_by),
  CONSTRAINT media_images_category_fk FOREIGN KEY (category_id) REFERENCES media_categories (id),
  CONSTRAINT media_images_created_by_fk FOREIGN KEY (created_by) REFERENCES admin_users (id),
  CONSTRAINT media_images_page_ck CHECK (page IN ('genesis', 'hive')),
  CONSTRAINT media_images_status_ck CHECK (status IN ('processing', 'ready', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS media_variants (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  image_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  format VARCHAR(8) NOT NULL,
  width INT UNSIGNED NOT NULL,
  height INT UNSIGNED NOT NULL,
  bytes INT UNSIGNED NOT NULL,
  path VARCHAR(255) NOT NULL,
  is_primary TINYINT(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY media_variants_image_format_width_uq (image_id, format, width),
  CONSTRAINT media_variants_image_fk FOREIGN KEY (image_id) REFERENCES media_images (id) ON DELETE CASCADE,
  CONSTRAINT media_variants_format_ck CHECK (format IN ('avif', 'webp', 'jpeg'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS enquiries (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(100) NOT NULL,
  phone VARCHAR(20) NOT NULL,
  email VARCHAR(254) NOT NULL,
  message TEXT NOT NULL,
  source VARCHAR(16) NOT NULL DEFAULT 'contact',
  status VARCHAR(16) NOT NULL DEFAULT 'new',
  spam_score INT UNSIGNED NOT NULL DEFAULT 0,
  spam_reason VARCHAR(64) NULL,
  user_agent VARCHAR(255) NULL,
  referer VARCHAR(255) NULL,
  ip_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  notified_at DATETIME(3) NULL,
  notify_attempts INT UNSIGNED NOT NULL DEFAULT 0,
  notify_error VARCHAR(255) NULL,
  notify_after DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY enquiries_created_at_idx (created_at),
  KEY enquiries_status_created_idx (status, created_at),
  KEY enquiries_source_created_idx (source, created_at),
  KEY enquiries_outbox_idx (notify_after),
  CONSTRAINT enquiries_source_ck CHECK (source IN ('contact', 'genesis', 'hive', 'home')),
  CONSTRAINT enquiries_status_ck CHECK (status IN ('new', 'read', 'replied', 'spam', 'archived'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS enquiry_replies (
  id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  enquiry_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  author_id CHAR(26) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  body TEXT NOT NULL,
  delivery_status VARCHAR(16) NOT NULL DEFAULT 'pending',
  delivery_error VARCHAR(255) NULL,
  sent_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY enquiry_replies_enquiry_idx (enquiry_id, created_at),
  KEY enquiry_replies_author_idx (author_id),
  CONSTRAINT enquiry_replies_enquiry_fk FOREIGN KEY (enquiry_id) REFERENCES enquiries (id),
  CONSTRAINT enquiry_replies_author_fk FOREIGN KEY (author_id) REFERENCES admin_users (id),
  CONSTRAINT enquiry_replies_status_ck CHECK (delivery_status IN ('pending', 'sent', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
