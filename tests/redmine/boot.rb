# frozen_string_literal: true
#
# One Redmine instance in one process: boots Debian's Redmine
# (/usr/share/redmine) with every per-instance file (config, SQLite
# database, log, tmp, files) under REDMINE_KIT_DIR, prepares the database
# (idempotent), writes the instance's settings as JSON, then serves HTTP
# with WEBrick on 127.0.0.1 until SIGTERM/SIGINT or until its parent dies.
# Started by redmine.py, which also writes REDMINE_KIT_DIR/config/*.
#
# Environment:
#   REDMINE_KIT_DIR       the instance directory (required)
#   REDMINE_KIT_PORT      port to listen on; 0 (default) = any free port
#   REDMINE_KIT_SETTINGS  where to write the settings JSON (required)
#   REDMINE_KIT_EAGER     "1" = eager-load the application (production
#                         default, slower boot); otherwise lazy
#   REDMINE_KIT_LOGIN_REQUIRED  "1" = Setting.login_required on
#   REDMINE_HOME          Redmine's code, default /usr/share/redmine

require 'pathname'
require 'json'

t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
timings = {}
lap = ->(name) { timings[name] = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0).round(2) }

KIT = Pathname.new(File.expand_path(ENV.fetch('REDMINE_KIT_DIR')))
HOME = File.expand_path(ENV.fetch('REDMINE_HOME', '/usr/share/redmine'))
SETTINGS = ENV.fetch('REDMINE_KIT_SETTINGS')
PORT = Integer(ENV.fetch('REDMINE_KIT_PORT', '0'))
PARENT = Process.ppid

ENV['RAILS_ENV'] = 'production'
ENV['BUNDLE_GEMFILE'] = File.join(HOME, 'Gemfile')
Dir.chdir(KIT.to_s)

# Debian's Redmine keeps per-instance files under Redmine.root
# (instances/<REDMINE_INSTANCE>, i.e. /var/lib/redmine/default): database.yml,
# secret_key.txt, configuration.yml, log/, tmp/, files/, public/plugin_assets.
# Point Redmine.root at this instance's directory before the application is
# defined; application.rb's `require 'redmine/multi_tenancy'` then finds the
# file already loaded and keeps this definition.
$LOAD_PATH.unshift(File.join(HOME, 'lib'))
require 'redmine/multi_tenancy'
module Redmine
  class << self
    def tenant
      'kit'
    end

    def root
      KIT
    end
  end
end

require File.join(HOME, 'config', 'application')
# config/environments/production.rb turns eager loading on; undo that after
# it ran (before_initialize hooks run after the environment file) unless asked.
unless ENV['REDMINE_KIT_EAGER'] == '1'
  Rails.application.config.before_initialize { Rails.application.config.eager_load = false }
end
lap.call(:application_defined)
require File.join(HOME, 'config', 'environment')
lap.call(:rails_booted)

# Refuse to run on anything but this instance's files.
db = ActiveRecord::Base.connection_db_config.database
[db, Rails.application.config.paths['log'].first, Rails.application.config.paths['tmp'].first,
 Attachment.storage_path].each do |path|
  unless File.expand_path(path).start_with?(KIT.to_s + '/')
    abort "boot.rb: #{path} is outside #{KIT}; refusing to run"
  end
end

# A database with no tables: build it (only when redmine.py was asked to
# start from scratch instead of copying the package's freshly installed one).
unless ActiveRecord::Base.connection.table_exists?('issues')
  ActiveRecord::Migration.verbose = false
  paths = Rails.application.paths['db/migrate'].existent  # /usr/share/redmine/db/migrate
  ActiveRecord::MigrationContext.new(paths, ActiveRecord::SchemaMigration).migrate
  ActiveRecord::Base.connection.schema_cache.clear!
  ActiveRecord::Base.descendants.each(&:reset_column_information)
  Redmine::DefaultData::Loader.load('en')
  lap.call(:migrated)
end

settings = ActiveRecord::Base.transaction do
  eager = Rails.application.config.eager_load
  Setting.rest_api_enabled = '1'
  Setting.notified_events = []          # no mail to render on every change
  Setting.default_language = 'en'
  # Redmine's default is '0': anonymous (and wrong-key) reads are served
  # whatever is public. REDMINE_KIT_LOGIN_REQUIRED=1 refuses them with 401.
  Setting.login_required = ENV['REDMINE_KIT_LOGIN_REQUIRED'] == '1' ? '1' : '0'

  trackers = Tracker.order(:position).to_a
  raise 'no trackers: default data missing' if trackers.empty?

  admin = User.where(admin: true, type: 'User').order(:id).first || raise('no admin user')
  admin.must_change_passwd = false
  admin.save!(validate: false)

  project = Project.find_by(identifier: 'tickets') ||
            Project.new(name: 'Tickets', identifier: 'tickets', is_public: false)
  project.tracker_ids = trackers.map(&:id)
  project.enabled_module_names = %w[issue_tracking]
  project.save!

  cf = IssueCustomField.find_by(name: 'External reference') ||
       IssueCustomField.new(name: 'External reference', field_format: 'string')
  cf.is_for_all = true
  cf.is_filter = true
  cf.searchable = true
  cf.visible = true
  cf.is_required = false
  cf.tracker_ids = trackers.map(&:id)
  cf.save!

  # A non-admin account, member of the project as Developer (the default
  # workflow applies to it; the admin bypasses workflow rules).
  dev = User.find_by(login: 'developer') ||
        User.new(firstname: 'Dev', lastname: 'Eloper', mail: 'developer@example.invalid').tap do |u|
          u.login = 'developer'
          u.password = u.password_confirmation = 'developer-pass-1'
        end
  dev.status = User::STATUS_ACTIVE
  dev.save!
  role = Role.find_by(name: 'Developer') || Role.givable.order(:position).first
  unless Member.exists?(user_id: dev.id, project_id: project.id)
    Member.create!(principal: dev, project: project, role_ids: [role.id])
  end

  {
    project: { id: project.id, identifier: project.identifier },
    custom_field_id: cf.id,
    admin: { id: admin.id, login: admin.login, api_key: admin.api_key },
    developer: { id: dev.id, login: dev.login, api_key: dev.api_key, role: role.name },
    statuses: IssueStatus.sorted.to_h { |s| [s.name, s.id] },
    closed_status_ids: IssueStatus.where(is_closed: true).order(:id).ids,
    priorities: IssuePriority.active.sorted.to_h { |p| [p.name, p.id] },
    default_priority_id: IssuePriority.default&.id,
    trackers: trackers.to_h { |t| [t.name, t.id] },
    login_required: Setting.login_required?,
    eager_load: eager,
    redmine_version: Redmine::VERSION.to_s,
  }
end
lap.call(:prepared)

require 'webrick'
require 'rack/handler/webrick'

log = File.open(KIT.join('log', 'webrick.log').to_s, 'a')
log.sync = true

# Stop when the parent (redmine.py) is gone, so a killed test run does not
# leave a server behind.
Thread.new do
  loop do
    sleep 1
    if Process.ppid != PARENT
      Rack::Handler::WEBrick.shutdown
      break
    end
  end
end

%w[TERM INT].each do |sig|
  trap(sig) { Thread.new { Rack::Handler::WEBrick.shutdown } }
end

# One request at a time. Rails' SQLite adapter opens deferred transactions:
# two concurrent writers can deadlock on the lock upgrade, and SQLite then
# answers SQLITE_BUSY at once (no busy timeout applies), which Redmine turns
# into a 500. A server on PostgreSQL/MySQL would not fail so; serializing
# keeps the kit's answers deterministic.
require 'rack/lock'
app = Rack::Lock.new(Rails.application)

Rack::Handler::WEBrick.run(
  app,
  Host: '127.0.0.1',
  Port: PORT,
  Logger: WEBrick::Log.new(log, WEBrick::Log::WARN),
  AccessLog: [[log, WEBrick::AccessLog::COMMON_LOG_FORMAT]]
) do |server|
  # Listening already (connections queue until the loop starts).
  lap.call(:listening)
  settings[:port] = server.config[:Port]
  settings[:pid] = Process.pid
  settings[:boot_seconds] = timings
  tmp = "#{SETTINGS}.tmp"
  File.write(tmp, JSON.generate(settings))
  File.rename(tmp, SETTINGS)
end
